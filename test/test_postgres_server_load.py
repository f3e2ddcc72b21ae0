"""The HTTP server on a PostgreSQL index under load and across a database restart (issue 26), as
real subprocesses: 8 clients at once get, for `vsearch` and `query`, the answers one client gets;
a server whose database stops and starts answers the requests that meet the dead server with
INDEX_UNREACHABLE (503, never a 500 or a hang) and serves the next ones without a restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import CliResult
from .models_fixture import requires_llama, requires_minilm
from .postgres_fixture import requires_postgres
from .serve_support import Server, http_server, without_timings
from .test_postgres_servers import _close

pytestmark = [pytest.mark.subprocess, requires_postgres, requires_llama, requires_minilm]

QUERIES = ["restore a single file from a snapshot", "how to compress a folder", "file permissions and owners"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    *(("vsearch", {"query": q, "n": 5}) for q in QUERIES),
    *(("query", {"query": q, "n": 5, "no_expand": True, "no_rerank": True}) for q in QUERIES),
    ("search", {"query": "backup restore", "n": 5}),
]
CLIENTS = 8


def _indexed(cli: Callable[..., CliResult], url: str, sample: Path) -> None:
    assert cli("--index", url, "collection", "add", sample, "--name", "sample").exit_code == 0
    embedded = cli("--index", url, "embed", "--json")
    assert embedded.exit_code == 0, embedded.stderr


def _answer(server: Server, tool: str, fields: dict[str, Any]) -> tuple[int, Any]:
    reply = server.post("/" + tool, fields, timeout=60)
    return reply.status, without_timings(reply.json())


def _at_once(server: Server, expected: list[Any], rounds: int = 2) -> list[str]:
    """CLIENTS threads, each sending every call ``rounds`` times (each starting elsewhere in the
    list); what differs from ``expected`` (one client's answers)."""
    failures: list[str] = []

    def client(offset: int) -> None:
        for step in range(rounds * len(CALLS)):
            index = (offset + step) % len(CALLS)
            tool, fields = CALLS[index]
            status, body = _answer(server, tool, fields)
            if status != 200:
                failures.append(f"{tool} {fields['query']!r}: {status} {body}")
                continue
            try:
                _close(body, expected[index], tool)
            except AssertionError as exc:
                failures.append(f"{tool} {fields['query']!r}: {exc}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    return failures


def _one_client(server: Server) -> list[Any]:
    answers = []
    for tool, fields in CALLS:
        status, body = _answer(server, tool, fields)
        assert status == 200, (tool, body)
        assert body["results"], (tool, fields)
        answers.append(body)
    return answers


def test_eight_clients_get_one_client_answers_from_vsearch_and_query(
    cli: Callable[..., CliResult], postgres_url: str, sample: Path, model: Path, tmp_path: Path
) -> None:
    _indexed(cli, postgres_url, sample)
    with http_server(tmp_path, "--index", postgres_url) as server:
        expected = _one_client(server)
        assert _at_once(server, expected) == []


def _unreachable(server: Server, tool: str, fields: dict[str, Any]) -> None:
    started = time.monotonic()
    status, body = _answer(server, tool, fields)
    assert status == 503 and body["error"]["code"] == "INDEX_UNREACHABLE", (tool, status, body)
    assert "cannot use the PostgreSQL index" in body["error"]["message"], body
    assert time.monotonic() - started < 30  # the connect timeout (10 s) and a direct try, no hang


def test_a_server_whose_database_restarts_answers_again_without_a_restart(
    cli: Callable[..., CliResult], own_postgres_server: Any, sample: Path, model: Path, tmp_path: Path
) -> None:
    url = own_postgres_server.url
    _indexed(cli, url, sample)
    with http_server(tmp_path, "--index", url) as server:
        expected = _one_client(server)
        assert _at_once(server, expected, rounds=1) == []  # the pool keeps several connections now

        # Restarted under the running server: every kept connection is dead. The first request
        # to meet one fails clearly; the pool then replaces the others.
        own_postgres_server.pause()
        own_postgres_server.resume()
        status, body = _answer(server, *CALLS[-1])
        assert status == 200 or (status == 503 and body["error"]["code"] == "INDEX_UNREACHABLE"), body
        assert _at_once(server, expected, rounds=1) == []

        # Down for a while: each request says so within the connect timeout.
        own_postgres_server.pause()
        _unreachable(server, *CALLS[-1])
        _unreachable(server, *CALLS[0])
        own_postgres_server.resume()
        assert _at_once(server, expected, rounds=1) == []
        assert "Traceback" not in server.output()
