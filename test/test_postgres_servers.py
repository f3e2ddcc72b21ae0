"""The servers on a PostgreSQL index: `tansaku --index postgresql://... mcp` over stdio and HTTP,
and `ui`'s daemon, as real subprocesses against a real server. They answer as the same servers on
a SQLite index of the same files; a running server sees another process's `update` and `embed`
without a restart; a daemon's files, command line and log never hold the database password."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import pytest

from .conftest import CliResult, share_collections
from .models_fixture import requires_llama, requires_minilm
from .postgres_fixture import requires_postgres
from .serve_support import Server, free_port, http_server, request, tansaku, without_timings

pytestmark = [pytest.mark.subprocess, requires_postgres]

from mcp import Client, StdioServerParameters  # noqa: E402  (after the importorskip in serve_support)

QUERY = "restore a single file from a snapshot"
# (tool, request fields): each tool the servers have, with options that matter.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": "backup restore", "limit": 5}),
    ("search", {"query": '"restore" OR snapshot', "limit": 10, "full": True}),
    ("vsearch", {"query": QUERY, "limit": 5}),
    ("query", {"query": QUERY, "limit": 5, "no_expand": True, "no_rerank": True}),
    ("query", {"searches": [{"type": "lex", "query": "snapshot"}, {"type": "vec", "query": QUERY}],
               "no_rerank": True}),
    ("get", {"ref": "sample/guides/backups.md", "from_line": 3, "max_lines": 4}),
    ("multi_get", {"pattern": "sample/guides/*.md", "max_lines": 3}),
]  # fmt: skip


def _close(a: Any, b: Any, where: str = "") -> None:
    """Equal, floats to 1e-4 (vector scores are float32 cosines on both sides: docs/backends.md)."""
    if isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, abs=1e-4), where
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def _http(server: Server, tool: str, fields: dict[str, Any]) -> Any:
    if tool == "get":
        reply = server.get("/get?" + urlencode(fields))
    else:
        reply = server.post("/" + tool.replace("_", "-"), fields)
    assert reply.status == 200, (tool, reply.body)
    return without_timings(reply.json())


async def _mcp(target: Any) -> list[Any]:
    with anyio.fail_after(120):
        async with Client(target, mode="legacy", read_timeout_seconds=90) as client:
            results = []
            for tool, fields in CALLS:
                result = await client.call_tool(tool, fields)
                assert not result.is_error, result.content[0].text
                results.append(without_timings(result.structured_content))
            return results


def _stdio(*index: str) -> StdioServerParameters:
    arguments = ["-m", "tansaku", *index, "mcp"]
    return StdioServerParameters(command=sys.executable, args=arguments, env=dict(os.environ))


@pytest.fixture
def both(cli: Callable[..., CliResult], postgres_url: str, sample: Path) -> str:
    """The sample in a SQLite index and in a database, the same collection registered in each;
    the database's URL."""
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    share_collections(postgres_url)
    update = cli("--index", postgres_url, "update")
    assert update.exit_code == 0, update.stderr
    return postgres_url


@requires_llama
@requires_minilm
def test_http_and_mcp_on_postgresql_answer_as_on_sqlite(
    cli: Callable[..., CliResult], both: str, model: Path, tmp_path: Path
) -> None:
    for index in ((), ("--index", both)):
        embedded = cli(*index, "embed", "--json")
        assert embedded.exit_code == 0, embedded.stderr
    with http_server(tmp_path) as sqlite, http_server(tmp_path, "--index", both) as postgres:
        assert "index:  postgresql://" in postgres.output()
        for tool, fields in CALLS:
            on_sqlite, on_postgres = _http(sqlite, tool, fields), _http(postgres, tool, fields)
            if tool in ("search", "vsearch", "query"):
                assert on_sqlite["results"], (tool, fields)
            _close(on_postgres, on_sqlite, tool)
        status = postgres.get("/status").json()
        assert status["index_path"].startswith("postgresql://")
        counts = [(c["documents"], c["chunks"], c["vectors"]) for c in status["collections"]]
        assert counts == [
            (c["documents"], c["chunks"], c["vectors"]) for c in sqlite.get("/status").json()["collections"]
        ]
        over_http = anyio.run(_mcp, postgres.url + "/mcp")
    over_stdio, sqlite_stdio = anyio.run(_mcp, _stdio("--index", both)), anyio.run(_mcp, _stdio())
    for i, (tool, _) in enumerate(CALLS):
        _close(over_http[i], sqlite_stdio[i], tool)
        _close(over_stdio[i], sqlite_stdio[i], tool)


@requires_llama
@requires_minilm
def test_a_running_server_sees_another_process_update_and_embed(
    cli: Callable[..., CliResult], both: str, model: Path, sample: Path, tmp_path: Path
) -> None:
    """Many processes share one database: what a second process indexes (and embeds) is found by
    the server at once, keyword and vector search alike (its kept vectors are re-read)."""
    assert cli("--index", both, "embed").exit_code == 0
    note = "# Harbour ledger\n\nThe zanzibarian harbour ledger records each ship's tonnage.\n"
    with http_server(tmp_path, "--index", both) as server:
        first = server.post("/vsearch", {"query": "ship tonnage records", "n": 3}).json()["results"]
        assert "ledger.md" not in [hit["path"] for hit in first]
        assert server.post("/search", {"query": "zanzibarian"}).json()["results"] == []
        (sample / "ledger.md").write_text(note, encoding="utf-8")
        other = tansaku("--index", both, "update", "--json")  # another process, beside the server
        assert other.returncode == 0, other.stderr
        found = server.post("/search", {"query": "zanzibarian"}).json()["results"]
        assert [hit["path"] for hit in found] == ["ledger.md"]
        embedded = tansaku("--index", both, "embed", "--json")
        assert embedded.returncode == 0, embedded.stderr
        nearest = server.post("/vsearch", {"query": "ship tonnage records", "n": 3}).json()["results"]
        assert nearest[0]["path"] == "ledger.md"


def test_concurrent_requests_each_get_their_answer(both: str, tmp_path: Path) -> None:
    """Requests served side by side never share a connection: each answer is its own request's."""
    queries = ["backup", "restore", "snapshot", "install", "config", "network"]
    with http_server(tmp_path, "--index", both) as server:
        alone = {q: server.post("/search", {"query": q, "n": 5}).json()["results"] for q in queries}
        assert any(alone.values())
        failures: list[str] = []

        def client(offset: int) -> None:
            for round_ in range(6):
                q = queries[(offset + round_) % len(queries)]
                reply = server.post("/search", {"query": q, "n": 5})
                if reply.status != 200 or reply.json()["results"] != alone[q]:
                    failures.append(f"{q}: {reply.status} {reply.body[:200]!r}")
                page = server.get("/get?" + urlencode({"ref": "sample/guides/backups.md", "max_lines": 2}))
                if page.status != 200:
                    failures.append(f"get: {page.status}")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert failures == []


def test_a_daemon_on_a_database_url_keeps_its_password_off_disk(both: str, index_path: Path) -> None:
    """`ui` starts the daemon of a database URL; its files are named by a digest of the URL, and
    neither they, its log, its command line nor what status and ui print hold the password (the
    test server trusts every local connection, so any password reaches the database)."""
    secret = "s3cret-pw"
    url = both.replace("postgres@", f"postgres:{secret}@", 1)
    port = free_port()
    started = tansaku("--index", url, "ui", "--port", str(port), "--no-open", "--json")
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        assert info["started"] is True and secret not in started.stdout
        assert f"tansaku mcp stop --index '{both}'" in info["message"]  # quoted: the URL has a ?
        folder = index_path.parent
        names = sorted(p.name for p in folder.iterdir() if p.name.startswith("mcp-"))
        assert names and all(name.startswith("mcp-pg-") for name in names), names
        for path in folder.iterdir():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
        assert secret.encode() not in Path(f"/proc/{info['pid']}/cmdline").read_bytes()
        status = tansaku("--index", url, "mcp", "status", "--json")
        assert status.returncode == 0, status.stderr
        shown = json.loads(status.stdout)
        assert shown["running"] is True and shown["pid"] == info["pid"]
        assert shown["index"].startswith("postgresql://postgres:***@") and secret not in status.stdout
        hits = request(f"http://127.0.0.1:{port}/search", method="POST", data={"query": "backup"}).json()
        assert hits["results"][0]["path"] == "guides/backups.md"
        again = tansaku("--index", both, "ui", "--port", str(free_port()), "--no-open", "--json")
        assert json.loads(again.stdout)["pid"] == info["pid"]  # the same database: its daemon is used
    finally:
        stopped = tansaku("--index", both, "mcp", "stop", "--json")  # the URL without the password
    assert stopped.returncode == 0, stopped.stderr
    assert tansaku("--index", url, "mcp", "status", "--json").returncode == 1


def test_kept_connections_one_per_thread_shared_by_nested_blocks(both: str) -> None:
    from tansaku.api import Tansaku

    pool = Tansaku(both).backend.reader_pool()
    try:
        with pool.reading() as outer, pool.reading() as inner:
            assert inner is outer  # a block inside a block shares its connection and snapshot
        seen: list[Any] = []

        def other_thread() -> None:
            with pool.reading() as conn:
                seen.append(conn.raw)

        with pool.reading() as held:
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join()
            assert seen and seen[0] is not held.raw  # never two threads on one connection
    finally:
        pool.close()


def test_a_kept_api_on_postgresql_sees_a_later_update(
    cli: Callable[..., CliResult], both: str, sample: Path
) -> None:
    from tansaku.api import Tansaku

    api = Tansaku(both, keep_connections=True, keep_vectors=True)
    try:
        assert not api.search("zanzibarian").hits
        (sample / "late.md").write_text("# Late note\n\nzanzibarian harbour ledger\n", encoding="utf-8")
        assert cli("--index", both, "update").exit_code == 0
        assert [hit.title for hit in api.search("zanzibarian").hits] == ["Late note"]
    finally:
        api.close()


def test_a_kept_api_on_an_empty_database_says_index_missing(postgres_url: str) -> None:
    from tansaku.api import Tansaku
    from tansaku.errors import IndexMissing

    api = Tansaku(postgres_url, keep_connections=True)
    try:
        with pytest.raises(IndexMissing):
            api.search("backup")
    finally:
        api.close()


TRANSCRIPTS = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"


def test_a_server_on_postgresql_searches_sessions_as_on_sqlite(
    cli: Callable[..., CliResult], both: str, tmp_path: Path
) -> None:
    """Transcript collections are on PostgreSQL too: a server there searches sessions, over HTTP
    and MCP, as the SQLite server does."""
    shutil.copytree(TRANSCRIPTS / "claude", tmp_path / "claude")
    assert cli("collection", "add", "--type", "claude", tmp_path / "claude", "--name", "chats").exit_code == 0
    share_collections(both)
    assert cli("--index", both, "update").exit_code == 0
    asked = {"query": "index", "collections": ["chats"]}
    with http_server(tmp_path) as sqlite, http_server(tmp_path, "--index", both) as postgres:
        on_sqlite, on_postgres = sqlite.post("/search", asked), postgres.post("/search", asked)
        assert on_sqlite.status == on_postgres.status == 200
        assert on_sqlite.json()["results"]
        _close(on_postgres.json()["results"], on_sqlite.json()["results"], "search")

        async def over_mcp() -> Any:
            async with Client(postgres.url + "/mcp", mode="legacy", read_timeout_seconds=60) as client:
                return await client.call_tool("search", asked)

        tool = anyio.run(over_mcp)
        assert not tool.is_error and tool.structured_content["results"]
