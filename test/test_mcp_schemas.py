"""The MCP layer without a subprocess: the tools' output schemas (valid, written from the result
types, tight), the instructions for each vector state, and the server in process under the
official SDK's client: that client checks structuredContent against the outputSchema, and the
resources keep to the specification (RFC 3986 URIs, RFC 6570 template, JSON-RPC error codes)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the serve extra is not installed: pip install -e '.[serve]'")

from jsonschema import Draft7Validator, Draft202012Validator

from tansaku import types
from tansaku.index.vector_state import VectorState
from tansaku.serve import mcp_schemas as S

from .models_fixture import requires_llama, requires_minilm

SRC = Path(__file__).resolve().parent.parent / "src" / "tansaku"


def _valid(schema: dict[str, Any], data: Any) -> bool:
    return not list(Draft202012Validator(schema).iter_errors(data))


def test_every_tool_declares_a_valid_output_schema_written_out_whole():
    from tansaku.serve.mcp import TOOLS
    from tansaku.serve.requests import OPERATIONS

    assert {t.name for t in TOOLS} == set(S.OUTPUT_SCHEMAS) <= set(OPERATIONS)
    for tool in TOOLS:
        schema = tool.output_schema
        assert schema is S.OUTPUT_SCHEMAS[tool.name]
        Draft202012Validator.check_schema(schema)  # the MCP default dialect
        Draft7Validator.check_schema(schema)  # and what older validators assume
        assert schema["type"] == "object" and schema["description"]  # an object root: 2025-11-25
        assert "$ref" not in json.dumps(schema) and "$schema" not in schema


def _object_schemas() -> list[tuple[dict[str, Any], type, set[str], set[str]]]:
    """(schema, result type, keys the JSON adds or drops, keys that appear only when set)."""
    from tansaku.precedence import SettingSource

    explain = S.EXPLAIN["properties"]
    hit_optional = {"body", "chunk_lines", "transcript", "fields", "page", "also_at", "also_in"}
    return [
        (S.HIT, types.Hit, set(), hit_optional),
        (S.TRANSCRIPT_HIT, types.TranscriptHit, set(), set()),
        (S.SNIPPET, types.Snippet, set(), set()),
        (S.NOTICE, types.Notice, set(), set()),
        (S.EXPLAIN, types.QueryExplanation, set(), set()),
        (explain["lists"]["items"], types.ListWeight, set(), set()),
        (explain["hits"]["items"], types.HitExplanation, set(), set()),
        (explain["hits"]["items"]["properties"]["ranks"]["items"], types.ListRank, set(), set()),
        (explain["stages"]["items"], types.StageTime, set(), set()),
        (S.PACK, types.ContextPack, set(), set()),
        (S.PACK["properties"]["items"]["items"], types.PackItem, set(), set()),
        (S.DOCUMENT, types.DocumentSlice, set(), {"also_at"}),
        (S.SESSION, types.SessionRead, set(), set()),
        (S.SESSION["properties"]["messages"]["items"], types.SessionMessage, set(), set()),
        (S.MULTI_GET, types.MultiGetResult, set(), set()),
        (S.SKIPPED, types.SkippedDocument, set(), set()),
        (S.STATUS, types.StatusReport, set(), {"server", "embed_remote"}),
        (S.STATUS["properties"]["contexts"]["items"], types.Context, set(), set()),
        (S.COLLECTION_INFO, types.CollectionInfo, set(), set()),
        (S.COLLECTION, types.Collection, set(), set()),
        (S.SETTING, SettingSource, set(), set()),
        (S.SERVER, types.ServerInfo, set(), set()),
        (S.EMBED_SPEED, types.EmbedSpeed, set(), set()),
        # Not rendered: the hits become `results`; definers and pinned stay inside.
        (
            S.search_result("search"),
            types.SearchResult,
            {"hits", "definers", "pinned", "used", "explain"},
            set(),
        ),
        (S.search_result("query"), types.SearchResult, {"hits", "definers", "pinned"}, {"used", "explain"}),
    ]


def test_each_shape_lists_exactly_the_fields_of_its_result_type():
    # A field added to a result type must be added to its schema, or every client would refuse
    # the result: the schema says no other key may appear.
    for schema, cls, changed, optional in _object_schemas():
        names = {f.name for f in fields(cls)} ^ changed
        if cls is types.SearchResult:
            names |= {"results"}
        assert set(schema["properties"]) == names, cls.__name__
        assert set(schema["properties"]) - set(schema["required"]) == optional, cls.__name__
        assert schema["additionalProperties"] is False, cls.__name__
        omitted = {f.name for f in fields(cls) if f.metadata.get("omit_if_none")}
        assert omitted <= optional, cls.__name__


def test_the_value_sets_are_the_codes_own():
    from tansaku.hybrid.pipeline import _used
    from tansaku.search.transcripts import LEVELS

    assert S.LEVELS == LEVELS
    done = set(re.findall(r'\bdone\("(\w+)"', (SRC / "hybrid" / "run.py").read_text(encoding="utf-8")))
    assert done == set(S.STAGES)
    kinds = {"k": "keyword", "v": "vector"}
    assert {_used(kinds, c) for c in (["k"], ["v"], ["k", "v"])} | {"hybrid"} == set(S.USED)


@pytest.fixture
def answers(cli: Callable, indexed: Path) -> Callable[[str, dict[str, Any]], Any]:
    from tansaku.serve.requests import Service

    service = Service()
    return lambda name, arguments: copy.deepcopy(service.call(name, arguments).data)


def test_the_schemas_refuse_what_the_results_never_hold(answers: Callable):
    search = answers("search", {"query": "restore"})
    assert _valid(S.OUTPUT_SCHEMAS["search"], search)
    assert _valid(S.OUTPUT_SCHEMAS["query"], answers("query", {"query": "restore", "no_rerank": True}))
    document = answers("get", {"ref": "sample/guides/backups.md"})
    status = answers("status", {})
    listing = answers("multi_get", {"pattern": "sample/guides/*.md"})
    assert all(
        _valid(S.OUTPUT_SCHEMAS[n], d)
        for n, d in (("get", document), ("status", status), ("multi_get", listing))
    )

    def spoiled(data: Any, change: Callable[[Any], None]) -> Any:
        data = copy.deepcopy(data)
        change(data)
        return data

    refused = [
        ("search", spoiled(search, lambda d: d.update(extra=1))),  # a key no result has
        ("search", spoiled(search, lambda d: d["results"][0].update(rank=1))),
        ("search", spoiled(search, lambda d: d.pop("total"))),  # a key every result has
        ("vsearch", search),  # mode "search"
        ("query", search),
        ("search", spoiled(search, lambda d: d["results"][0].update(docid="28ae98"))),  # no #
        ("search", spoiled(search, lambda d: d["results"][0].update(also_at=[]))),  # only when some
        ("search", spoiled(search, lambda d: d["results"][0].update(score=1.5))),
        ("search", spoiled(search, lambda d: d.update(limit=0))),
        ("search", spoiled(search, lambda d: d["warnings"].append({"code": "no such", "message": ""}))),
        ("get", spoiled(document, lambda d: d.update(lines=[1]))),
        ("get", spoiled(document, lambda d: d.update(results=[]))),  # neither a document nor turns
        ("multi_get", spoiled(listing, lambda d: d.update(max_lines=0))),
        ("status", spoiled(status, lambda d: d["collections"][0].update(vector_state="some"))),
        ("status", spoiled(status, lambda d: d["collections"][0]["collection"].update(type="web"))),
    ]
    for name, data in refused:
        assert not _valid(S.OUTPUT_SCHEMAS[name], data), name


# --- instructions: what the tools do in each vector state ------------------------------------


def _info(name: str, chunks: int, full: int, quick: int, *, include: bool = True, stale: int = 0) -> Any:
    state = VectorState(chunks, full, quick)
    return types.CollectionInfo(
        collection=types.Collection(name=name, path=f"/data/{name}", include=include),
        documents=chunks,
        last_update=None,
        chunks=chunks,
        vectors=full,
        quick_vectors=quick,
        stale_vectors=stale,
        vector_state=state.name,
        vector_state_note=state.describe(name, 56),
    )


def _embed(present: bool = True, reference: str = "minilm.gguf") -> Any:
    from tansaku.models.registry import ModelRef

    return ModelRef("embed", reference, "env", Path("/models") / "minilm.gguf", present, None)


def _vsearch(collections: list[Any], embed: Any) -> str:
    from tansaku.serve.summary import tool_lines

    lines = tool_lines(collections, embed, "no expansion unless `expand` is true")
    assert lines[0].startswith("`search`: keyword search") and lines[3].startswith("`get`, `multi_get`")
    assert lines[2].startswith("`query`: keyword search fused with ")
    return lines[1] + "\n" + lines[2]


@pytest.mark.parametrize(
    ("collections", "said"),
    [
        ([_info("notes", 13, 0, 0)], "`vsearch`: fails with NO_VECTORS: the collections it searches have no"),
        ([_info("notes", 13, 0, 13)], "`vsearch`: answers from quick vectors in notes (title, headings"),
        (
            [_info("notes", 13, 5, 8)],
            "answers from part of notes (5 of 13 chunks with full vectors, 8 with quick",
        ),
        (
            [_info("notes", 13, 5, 0)],
            "answers from part of notes (5 of 13 chunks with full vectors; the rest",
        ),
        (
            [_info("notes", 13, 13, 0)],
            "`vsearch`: answers from full vectors in notes.\n`query`: keyword search",
        ),
        (
            [_info("a", 4, 4, 0), _info("b", 9, 0, 9), _info("c", 3, 0, 0)],
            "answers from full vectors in a; quick vectors in b (",
        ),
        ([_info("a", 4, 4, 0), _info("c", 3, 0, 0)], "; skips c (no vectors yet: a PENDING_VECTORS warning)"),
        ([_info("a", 4, 0, 0), _info("x", 2, 2, 0, include=False)], "naming x in `collections` searches"),
        ([_info("a", 4, 0, 0, stale=4)], "NO_VECTORS: the collections it searches have no vectors (the 4"),
    ],
)
def test_the_instructions_say_what_vsearch_does_in_each_state(collections: list[Any], said: str):
    text = _vsearch(collections, _embed())
    assert said in text
    fails = "fails" in text.split("\n")[0]
    assert fails == all(c.vector_state == "none" for c in collections if c.collection.include)
    assert ("keyword only" in text) == fails


def test_without_the_embedding_model_vsearch_fails_whatever_the_vectors():
    text = _vsearch([_info("notes", 13, 13, 0)], _embed(present=False))
    assert "`vsearch`: fails with MODEL_MISSING: the embedding model (minilm.gguf) is not on this" in text
    remote = _vsearch([_info("notes", 13, 0, 13)], _embed(False, "http://127.0.0.1:8080/v1#fake-embed"))
    assert "answers from quick vectors in notes" in remote  # another program embeds: nothing here


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("model")
def test_the_instructions_follow_the_index_from_none_to_quick(cli: Callable, indexed: Path):
    from tansaku.api import Tansaku
    from tansaku.serve.summary import LiveInstructions, instructions

    api = Tansaku()
    live = LiveInstructions(api)
    before = live()
    assert live() is before  # nothing changed: the same text
    assert "vectors none: vector search and query's vector side skip it" in before
    assert "`vsearch`: fails with NO_VECTORS" in before and "0 vectors" not in before
    assert "`tansaku embed` computes a vector for each chunk" in before
    assert cli("embed", "--quick-only").exit_code == 0
    after = live()
    assert after == instructions(api) != before
    assert "vectors quick: all 13 chunks have a quick vector" in after
    assert "`vsearch`: answers from quick vectors in sample" in after
    assert "`query`: keyword search fused with the same vector search" in after
    assert "vsearch fails" not in after and "`vsearch`: fails" not in after
    assert "Models: embed present (" in after


# --- the server in process, under the SDK's client -------------------------------------------


async def _in_process(server: Any, work: Callable[[Any], Any]) -> Any:
    from mcp import Client

    with anyio.fail_after(60):
        async with Client(server, mode="legacy") as client:
            return await work(client)


def test_the_client_checks_results_against_the_output_schema(
    cli: Callable, indexed: Path, monkeypatch: pytest.MonkeyPatch
):
    """The SDK's client validates structuredContent against the listed outputSchema, and skips
    tool errors, which carry none: so a result that broke its schema would not pass unseen."""
    from tansaku.serve import mcp
    from tansaku.serve.requests import Service

    service = Service()

    async def calls(client: Any) -> tuple[Any, Any]:
        good = await client.call_tool("search", {"query": "restore"})
        error = await client.call_tool("get", {"ref": "sample/nope.md"})
        monkeypatch.setattr(mcp, "tool_result", lambda answer, s: mcp.types.CallToolResult(
            content=[mcp.types.TextContent(text="")], structured_content={"results": "none"}
        ))  # fmt: skip
        with pytest.raises(RuntimeError, match="Invalid structured content returned by tool search"):
            await client.call_tool("search", {"query": "restore"})
        return good, error

    good, error = anyio.run(_in_process, mcp.build(service), calls)
    assert not good.is_error and good.structured_content["results"]
    assert error.is_error and error.structured_content is None
    assert json.loads(error.content[-1].text)["error"]["code"] == "DOC_NOT_FOUND"
    assert error.content[0].text.startswith("error [DOC_NOT_FOUND]: no document matches")


def test_resources_keep_to_the_specification(cli: Callable, indexed: Path, tmp_path: Path):
    from mcp.shared.exceptions import MCPError

    from tansaku.serve import mcp
    from tansaku.serve.requests import Service

    async def calls(client: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"resources": (await client.list_resources()).resources}
        seen["template"] = (await client.list_resource_templates()).resource_templates[0]
        encoded = "tansaku://sample/zh/%E5%8E%8B%E7%BC%A9.md"
        seen["encoded"] = await client.read_resource(encoded)
        seen["as_shown"] = await client.read_resource("tansaku://sample/zh/压缩.md")
        for key, call in (
            ("missing", client.read_resource("tansaku://sample/nope.md")),
            ("foreign", client.read_resource("file:///etc/passwd")),
            ("escape", client.read_resource("tansaku://sample/guides/backups.md/../../../etc")),
            ("cursor", client.list_resources(cursor="x")),
            ("prompts", client.list_prompts()),
        ):
            with pytest.raises(MCPError) as raised:
                await call
            seen[key] = raised.value.error
        return seen

    seen = anyio.run(_in_process, mcp.build(Service()), calls)
    by_uri = {r.uri: r for r in seen["resources"]}
    backups = by_uri["tansaku://sample/guides/backups.md"]
    assert backups.name == "sample/guides/backups.md" and backups.title == "Nightly backups"
    assert (
        backups.mime_type == "text/markdown"
        and backups.size == (indexed / "guides/backups.md").stat().st_size
    )
    assert backups.annotations.last_modified.endswith("Z")
    # RFC 3986: a non-ASCII path is percent-encoded; a read takes that form or the one results show.
    assert "tansaku://sample/zh/%E5%8E%8B%E7%BC%A9.md" in by_uri and all(
        r.uri.isascii() for r in by_uri.values()
    )
    expected = (indexed / "zh" / "压缩.md").read_text(encoding="utf-8")
    assert seen["encoded"].contents[0].text == seen["as_shown"].contents[0].text == expected
    # RFC 6570: {+path} keeps the path's slashes (a plain {path} would encode them).
    assert seen["template"].uri_template == "tansaku://{collection}/{+path}"
    assert seen["missing"].code == -32002 and seen["missing"].data["error"]["code"] == "DOC_NOT_FOUND"
    assert seen["foreign"].code == -32602 and seen["escape"].code == -32602
    assert seen["cursor"].code == -32602
    assert seen["prompts"].code == -32601  # no prompts, and the capability is not declared


def test_a_resource_read_under_the_2026_protocol_says_not_found_as_invalid_params(
    cli: Callable, indexed: Path
):
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from tansaku.serve import mcp
    from tansaku.serve.requests import Service

    async def read() -> Any:
        async with Client(mcp.build(Service()), mode="2026-07-28") as client:
            tools = (await client.list_tools()).tools
            assert all(t.output_schema["type"] == "object" for t in tools)
            with pytest.raises(MCPError) as raised:
                await client.read_resource("tansaku://sample/nope.md")
            return raised.value.error

    assert anyio.run(read).code == -32602  # -32002 is retired from 2026-07-28
