"""The same request gives the same results through the CLI's --json, the HTTP JSON API and MCP's
structuredContent: search, vsearch, query, get and multi_get, with the real MiniLM model."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from .models_fixture import requires_llama, requires_minilm
from .serve_support import Server, http_server, tansaku, without_timings

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends, requires_llama, requires_minilm]

from mcp import Client, StdioServerParameters  # noqa: E402

QUERY = "restore a single file from a snapshot"
# (tool, request fields, CLI words): the same options, spelled for each front end.
CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("search", {"query": "backup restore", "limit": 5}, ["search", "backup restore", "-n", "5"]),
    ("vsearch", {"query": QUERY, "limit": 5}, ["vsearch", QUERY, "-n", "5"]),
    (
        "query",
        {"query": QUERY, "limit": 5, "no_expand": True, "no_rerank": True},
        ["query", QUERY, "-n", "5", "--no-expand", "--no-rerank"],
    ),
    (
        "query",
        {
            "searches": [{"type": "lex", "query": "snapshot"}, {"type": "vec", "query": QUERY}],
            "no_rerank": True,
        },
        ["query", f"lex: snapshot\nvec: {QUERY}", "--no-rerank"],
    ),
    (
        "get",
        {"ref": "sample/guides/backups.md", "from_line": 3, "max_lines": 4},
        ["get", "sample/guides/backups.md", "--from", "3", "-l", "4"],
    ),
    (
        "multi_get",
        {"pattern": "sample/guides/*.md", "max_lines": 3},
        ["multi-get", "sample/guides/*.md", "-l", "3"],
    ),
]


@pytest.fixture
def embedded(cli, model: Path, indexed: Path) -> Path:
    result = cli("embed", "--json")
    assert result.exit_code == 0, result.stderr
    return indexed


@pytest.fixture
def server(embedded: Path, tmp_path: Path) -> Iterator[Server]:
    with http_server(tmp_path) as running:
        yield running


def _http(server: Server, tool: str, fields: dict[str, Any]) -> Any:
    if tool == "get":
        from urllib.parse import urlencode

        reply = server.get("/get?" + urlencode(fields))
    else:
        reply = server.post("/" + tool.replace("_", "-"), fields)
    assert reply.status == 200, reply.body
    return reply.json()


async def _mcp(target: Any) -> list[Any]:
    with anyio.fail_after(120):
        async with Client(target, mode="legacy", read_timeout_seconds=90) as client:
            results = []
            for tool, fields, _ in CASES:
                result = await client.call_tool(tool, fields)
                assert not result.is_error, result.content[0].text
                results.append(result.structured_content)
            return results


def test_cli_http_and_mcp_give_identical_results(server: Server):
    over_http_mcp = anyio.run(_mcp, server.url + "/mcp")
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "tansaku", "mcp"], env=dict(os.environ))
    over_stdio = anyio.run(_mcp, stdio)
    for i, (tool, fields, words) in enumerate(CASES):
        run = tansaku(*words, "--json")
        assert run.returncode == 0, run.stderr
        cli_data = without_timings(json.loads(run.stdout))
        if tool in ("search", "vsearch", "query"):
            assert cli_data["results"], f"{tool}: nothing to compare"
        if tool == "vsearch":
            assert cli_data["mode"] == "vsearch"
        assert without_timings(_http(server, tool, fields)) == cli_data, tool
        assert without_timings(over_http_mcp[i]) == cli_data, tool
        assert without_timings(over_stdio[i]) == cli_data, tool
