"""`where` and `fields` over the JSON endpoints and the MCP tools, against real servers."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from .models_fixture import requires_llama, requires_minilm
from .serve_support import Server, http_server, tool_error

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends]

from mcp import Client, StdioServerParameters  # noqa: E402  (after the importorskip in serve_support)

FIELDS = Path(__file__).resolve().parent.parent / "fixtures" / "fields"


@pytest.fixture
def garden(cli, tmp_path: Path) -> Path:
    target = tmp_path / "garden"
    shutil.copytree(FIELDS, target)
    assert cli("collection", "add", target, "--name", "garden").exit_code == 0
    return target


@pytest.fixture
def server(garden: Path, tmp_path: Path) -> Iterator[Server]:
    with http_server(tmp_path) as running:
        yield running


def stems(data: dict[str, Any]) -> set[str]:
    return {Path(hit["path"]).stem for hit in data["results"]}


def test_json_endpoints_take_where_and_fields(server: Server, cli):
    reply = server.post("/search", {"query": "garden", "where": ["tags=python", "date>=2024-06-01"]})
    assert reply.status == 200 and stems(reply.json()) == {"gamma"}
    one = server.post("/search", {"query": "garden", "where": "status=draft", "fields": True}).json()
    assert stems(one) == {"alpha"} and one["results"][0]["fields"]["priority"] == 2
    # The same data as the CLI's --json.
    cli_data = cli("search", "garden", "--json", "--where", "status=draft", "--fields").json()
    assert one["results"] == cli_data["results"]
    query = server.post(
        "/query",
        {"query": "garden", "no_expand": True, "no_rerank": True, "where": ["tags=rust"], "fields": True},
    ).json()
    assert stems(query) == {"beta"} and query["results"][0]["fields"]["tags"] == ["rust", "search"]
    packed = server.post(
        "/query",
        {"query": "garden", "no_expand": True, "no_rerank": True, "pack": True, "where": "tags=rust"},
    ).json()
    assert [item["path"] for item in packed["items"]] == ["notes/beta.md"]


def test_bad_where_over_http_is_400_with_the_usage_error(server: Server):
    for where in ("tags", "date>=soon", ["ok=1", ""]):
        reply = server.post("/search", {"query": "garden", "where": where})
        assert reply.status == 400, reply.body
        assert reply.json()["error"]["code"] == "USAGE"
    assert server.post("/search", {"query": "garden", "where": 3}).status == 400
    assert server.post("/search", {"query": "garden", "fields": "maybe"}).status == 400
    assert server.post("/query", {"query": "garden", "pack": True, "fields": True}).status == 400


@requires_llama
@requires_minilm
def test_vsearch_endpoint_takes_where(cli, model: Path, garden: Path, tmp_path: Path):
    assert cli("embed").exit_code == 0
    with http_server(tmp_path) as running:
        reply = running.post(
            "/vsearch", {"query": "garden shears", "min_score": 0, "all": True, "where": ["tags=search"]}
        )
        assert reply.status == 200, reply.body
        assert stems(reply.json()) == {"alpha", "beta"}


async def _mcp(params: StdioServerParameters) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with anyio.fail_after(90):
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            seen["instructions"] = client.instructions
            seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            seen["search"] = await client.call_tool(
                "search", {"query": "garden", "where": ["tags=python", "priority<=1"], "fields": True}
            )
            seen["query"] = await client.call_tool(
                "query", {"query": "garden", "no_expand": True, "no_rerank": True, "where": ["draft=true"]}
            )
            seen["bad"] = await client.call_tool("search", {"query": "garden", "where": ["date>tomorrow"]})
    return seen


def test_mcp_tools_take_where_and_fields(garden: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tansaku", "mcp"], env=dict(os.environ)
    )
    seen = anyio.run(_mcp, params)
    assert "`where` (FIELD=VALUE" in seen["instructions"]
    for name in ("search", "vsearch", "query"):
        properties = seen["tools"][name].input_schema["properties"]
        assert properties["where"]["type"] == "array" and properties["where"]["maxItems"] == 20
        assert properties["fields"]["type"] == "boolean"
    search = seen["search"]
    assert not search.is_error, search.content[0].text
    assert stems(search.structured_content) == {"gamma"}
    assert search.structured_content["results"][0]["fields"]["title"] == "Gamma compost notes"
    assert "fields: title: Gamma compost notes" in search.content[0].text
    assert stems(seen["query"].structured_content) == {"epsilon"}
    bad = tool_error(seen["bad"])
    assert bad["code"] == "USAGE" and "compares dates" in bad["message"]
