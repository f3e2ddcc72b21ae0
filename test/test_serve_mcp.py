"""An MCP client session from the official SDK against the real server, over stdio and over
Streamable HTTP: initialize, list tools, call every tool, list and read resources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from .serve_support import http_server, tool_error

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends]

from mcp import Client, StdioServerParameters  # noqa: E402  (after the importorskip in serve_support)

TOOLS = {"search", "vsearch", "query", "get", "multi_get", "status"}
SESSION_TIMEOUT_S = 90


async def _session(target: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(target, mode="legacy", read_timeout_seconds=60) as client:
            seen["server"] = client.server_info.name if client.server_info else None
            seen["instructions"] = client.instructions
            tools = (await client.list_tools()).tools
            seen["tools"] = {t.name: t for t in tools}
            calls = {
                "search": {"query": "restore", "limit": 2},
                "vsearch": {"query": "restore"},
                "query": {"query": "restore", "no_expand": True, "no_rerank": True},
                "query_document": {"searches": [{"type": "lex", "query": "restore"}], "no_rerank": True},
                "get": {"ref": "sample/guides/backups.md", "from_line": 6, "max_lines": 2},
                "multi_get": {"pattern": "sample/guides/*.md", "max_lines": 1},
                "status": {},
                "traversal": {"ref": "../../etc/passwd"},
            }
            for key, arguments in calls.items():
                name = {"query_document": "query", "traversal": "get"}.get(key, key)
                seen[key] = await client.call_tool(name, arguments)
            resources = await client.list_resources()
            seen["resources"] = [str(r.uri) for r in resources.resources]
            seen["templates"] = (await client.list_resource_templates()).resource_templates
            seen["read"] = await client.read_resource("tansaku://sample/guides/backups.md")
    return seen


def _check(seen: dict[str, Any], sample: Path) -> None:
    from jsonschema import Draft202012Validator

    assert seen["server"] == "tansaku"
    assert "sample: 13 documents" in seen["instructions"]
    assert set(seen["tools"]) == TOOLS
    for tool in seen["tools"].values():
        assert tool.description and tool.title and tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object"
        assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is False
    assert seen["tools"]["query"].input_schema["properties"]["searches"]["maxItems"] == 10
    for key in ("search", "query", "query_document", "get", "multi_get", "status"):
        name = key.removesuffix("_document")
        schema = seen["tools"][name].output_schema
        assert not list(Draft202012Validator(schema).iter_errors(seen[key].structured_content)), key

    search = seen["search"]
    assert not search.is_error
    assert search.structured_content["results"][0]["path"] == "guides/backups.md"
    assert "tansaku://sample/guides/backups.md" in search.content[0].text

    vsearch = seen["vsearch"]  # no model or vectors here: an error that names the command to run
    code = tool_error(vsearch)["code"]
    assert code in ("MODEL_MISSING", "NO_VECTORS")
    assert f"`vsearch`: fails with {code}" in seen["instructions"]  # as the instructions said
    assert "For the user to run" in vsearch.content[0].text and "tansaku " in vsearch.content[0].text

    for key in ("query", "query_document"):
        query = seen[key]
        assert not query.is_error, query.content[0].text
        assert query.structured_content["results"][0]["path"] == "guides/backups.md"
    assert seen["query"].structured_content["used"] == "keyword"

    get = seen["get"].structured_content
    assert get["lines"] == ["## Restoring a file", ""] and get["from_line"] == 6
    assert " 6: ## Restoring a file" in seen["get"].content[0].text  # numbered, as `tansaku get` prints
    assert all(len(d["lines"]) == 1 for d in seen["multi_get"].structured_content["documents"])
    assert seen["status"].structured_content["collections"][0]["documents"] == 13
    assert tool_error(seen["traversal"])["code"] == "PATH_REFUSED"

    assert "tansaku://sample/guides/backups.md" in seen["resources"] and len(seen["resources"]) == 13
    assert seen["templates"][0].uri_template == "tansaku://{collection}/{+path}"
    text = seen["read"].contents[0].text
    assert text == (sample / "guides" / "backups.md").read_text(encoding="utf-8")


def test_mcp_over_stdio(indexed: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tansaku", "mcp"], env=dict(os.environ)
    )
    _check(anyio.run(_session, params), indexed)


def test_mcp_over_streamable_http(indexed: Path, tmp_path: Path):
    with http_server(tmp_path) as server:
        _check(anyio.run(_session, server.url + "/mcp"), indexed)


def test_stdio_exits_cleanly_at_end_of_input_and_writes_only_protocol(indexed: Path):
    hello = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "tansaku", "mcp"],
        input=hello,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and '"serverInfo"' in lines[0] and '"instructions"' in lines[0]


def test_stdio_refuses_http_only_options(cli):
    result = cli("mcp", "--daemon", "--json")
    assert result.exit_code == 2 and "--http" in result.error()["message"]
