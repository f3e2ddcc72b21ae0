"""Every MCP tool declares an outputSchema, and its structuredContent keeps to it: the official
SDK as the client (which checks each result against the schema it listed, and raises when one
does not fit) and jsonschema besides, over stdio and Streamable HTTP, against a real index of
the sample files, transcripts, copies, translations and a PDF, with the MiniLM model giving no,
quick, partial and full vectors. The instructions a client gets follow those states."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from .models_fixture import requires_llama, requires_minilm
from .serve_support import http_server, tool_error

pytestmark = [pytest.mark.subprocess, pytest.mark.both_backends, requires_llama, requires_minilm]

from jsonschema import Draft7Validator, Draft202012Validator  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CHATS = REPO / "fixtures" / "transcripts" / "mixed" / "claude"
PDF = REPO / "fixtures" / "formats" / "guide.pdf"
TURN = "chats/-home-mei-api/a1c0e5d2-6b3f-4e21-9d7a-3f5b8c2e1a01.jsonl:8"
SESSION_TIMEOUT_S = 120

# (tool, arguments, error code or None): results, no results, warnings, copies, translations,
# transcripts, fields, limits, packs and errors.
BREADTH: list[tuple[str, dict[str, Any], str | None]] = [
    ("search", {"query": "restore"}, None),
    ("search", {"query": "restore", "limit": 1, "full": True, "fields": True}, None),
    ("search", {"query": "install", "where": ["tags=linux"], "fields": True}, None),
    ("search", {"query": "restore", "all_copies": True, "all": True}, None),
    ("search", {"query": "zebrafish"}, None),  # also_in
    ("search", {"query": "qqqzzzxxy"}, None),  # no results
    ("search", {"query": "guide", "collections": ["docs"]}, None),  # a PDF hit has its page
    *[
        ("search", {"query": "deploy", "level": level}, None)
        for level in ("turn", "run", "session", "project")
    ],
    ("search", {"query": "restore", "where": ["date>tomorrow"]}, "USAGE"),
    ("vsearch", {"query": "restore a single file"}, None),  # quick vectors, pending ones
    ("vsearch", {"query": "restore a file", "all": True, "min_score": 0, "full": True}, None),
    ("vsearch", {"query": "deploy", "level": "turn", "collections": ["chats"]}, "NO_VECTORS"),
    ("query", {"query": "restore", "no_rerank": True}, None),
    ("query", {"query": "restore", "explain": True, "no_rerank": True, "limit": 2}, None),
    ("query", {"searches": [{"type": "lex", "query": "restore"}, {"type": "vec", "query": "backups"}]}, None),
    ("query", {"query": "restore", "pack": True, "max_items": 1}, None),  # omitted > 0
    ("query", {"query": "qqqzzzxxy", "pack": True}, None),
    ("query", {"query": "qqqzzzxxy"}, None),
    ("query", {"query": "zebrafish", "collections": ["manual"]}, None),  # no vectors: keyword only
    ("query", {"query": "restore", "pack": True, "fields": True}, "USAGE"),
    ("get", {"ref": "sample/guides/backups.md"}, None),
    ("get", {"ref": "sample/guides/backups.md:6:2", "max_bytes": 20}, None),  # truncated
    ("get", {"ref": "#28ae98"}, None),  # a text at two paths: also_at
    ("get", {"ref": TURN, "context": 1}, None),  # a transcript turn: the turns around it
    ("get", {"ref": TURN, "max_lines": 1}, None),
    ("get", {"ref": "sample/nope.md"}, "DOC_NOT_FOUND"),
    ("get", {"ref": "../../etc/passwd"}, "PATH_REFUSED"),
    ("multi_get", {"pattern": "sample/guides/*.md", "max_lines": 1}, None),
    ("multi_get", {"pattern": "sample/**/*.md", "max_bytes": 300}, None),  # skipped, listed
    ("multi_get", {"pattern": "sample/nothing*.md"}, None),  # NO_MATCH
    ("status", {}, None),
]


def check(tool: Any, result: Any, error: str | None) -> dict[str, Any] | None:
    """The result of a call as expected; its structuredContent valid by the listed schema (the
    client already checked it: it raises on a result that does not fit)."""
    if error is not None:
        assert tool_error(result)["code"] == error, result.content[0].text
        assert result.content[0].text.startswith(f"error [{error}]")
        return None
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    for validator in (Draft202012Validator, Draft7Validator):
        problems = [f"{e.json_path}: {e.message}" for e in validator(tool.output_schema).iter_errors(data)]
        assert not problems, (tool.name, problems[:3])
    return data


async def _session(target: Any, calls: list[tuple[str, dict[str, Any], str | None]]) -> dict[str, Any]:
    seen: dict[str, Any] = {"results": []}
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(target, mode="legacy", read_timeout_seconds=90) as client:
            seen["instructions"] = client.instructions
            seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            for name, arguments, error in calls:
                result = await client.call_tool(name, arguments)
                seen["results"].append(check(seen["tools"][name], result, error))
    return seen


@pytest.fixture
def library(cli: Callable, sample: Path, tmp_path: Path, model: Path) -> Path:
    """The sample collection with an exact copy (also_at) and a file changed since it was indexed
    (stale); a manual in two languages (also_in); Claude transcripts; a PDF when the docs extra is
    here; quick vectors for the sample only."""
    shutil.copy(sample / "guides" / "backups.md", sample / "notes" / "backups-copy.md")
    for language, text in (("en", "The zebrafish swims north."), ("fr", "Le zebrafish nage au nord.")):
        (tmp_path / "manual" / language).mkdir(parents=True)
        (tmp_path / "manual" / language / "intro.md").write_text(f"# Intro\n\n{text}\n", encoding="utf-8")
    shutil.copytree(CHATS, tmp_path / "chats")
    adds = [
        (sample, "--name", "sample"),
        (tmp_path / "manual", "--name", "manual"),
        ("--type", "claude", tmp_path / "chats", "--name", "chats"),
    ]
    if importlib.util.find_spec("pypdfium2") is not None:
        (tmp_path / "docs").mkdir()
        shutil.copy(PDF, tmp_path / "docs")
        adds.append((tmp_path / "docs", "--name", "docs", "--formats", "pdf"))
    for args in adds:
        result = cli("collection", "add", *args)
        assert result.exit_code == 0, result.stderr
    assert cli("embed", "--quick-only", "-c", "sample").exit_code == 0
    with open(sample / "notes" / "ideas.md", "a", encoding="utf-8") as changed:
        changed.write("\nA line written after the index was made.\n")
    return sample


def test_every_tool_keeps_to_its_output_schema_over_stdio(library: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tansaku", "mcp"], env=dict(os.environ)
    )
    calls = [c for c in BREADTH if c[1].get("collections") != ["docs"] or (library.parent / "docs").exists()]
    seen = anyio.run(_session, params, calls)
    assert set(seen["tools"]) == {"query", "search", "vsearch", "get", "multi_get", "status"}
    results = [r for r in seen["results"] if r is not None]
    hits = [h for r in results for h in r.get("results", ())]
    # The cases reached what they were written for.
    assert any("also_at" in h for h in hits) and any(h.get("also_in") == ["fr"] for h in hits)
    assert any(h["stale"] for h in hits) and any("fields" in h for h in hits)
    assert {h["transcript"]["level"] for h in hits if "transcript" in h} == {
        "turn",
        "run",
        "session",
        "project",
    }
    warnings = {w["code"] for r in results for w in r.get("warnings", ())}
    assert {"QUICK_VECTORS", "PENDING_VECTORS", "NO_MATCH"} <= warnings
    assert any(r.get("omitted") for r in results) and any(r.get("skipped") for r in results)
    assert any(r.get("truncated") for r in results) and any(r.get("messages") for r in results)
    assert any(r.get("total", 0) > len(r.get("results", ())) for r in results)
    assert [r["results"] for r in results if r.get("query") == "qqqzzzxxy" and r.get("mode") == "search"] == [
        []
    ]
    if (library.parent / "docs").exists():
        assert any(h.get("page") == 1 for h in hits)
    # As the instructions said: quick vectors in the sample, none elsewhere.
    assert "`vsearch`: answers from quick vectors in sample" in seen["instructions"]
    assert "fails" not in seen["instructions"].split("`vsearch`:")[1].split("\n")[0]


def _vsearch_as_said(instructions: str, result: Any) -> None:
    """What the instructions said `vsearch` does is what it did."""
    said = re.search(r"^- `vsearch`: (.*)$", instructions, re.M)
    assert said, instructions
    if said.group(1).startswith("fails with "):
        assert tool_error(result)["code"] == said.group(1).split()[2].rstrip(":")
    else:
        assert said.group(1).startswith("answers from ") and not result.is_error


STATE_CALLS: list[tuple[str, dict[str, Any], str | None]] = [
    ("search", {"query": "restore"}, None),
    ("query", {"query": "restore a single file", "no_rerank": True}, None),
    ("get", {"ref": "sample/guides/backups.md"}, None),
    ("multi_get", {"pattern": "sample/guides/*.md"}, None),
    ("status", {}, None),
]


async def _state(url: str) -> dict[str, Any]:
    seen = await _session(url, STATE_CALLS)
    async with Client(url, mode="legacy", read_timeout_seconds=90) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        seen["vsearch"] = result = await client.call_tool("vsearch", {"query": "restore a single file"})
        _vsearch_as_said(seen["instructions"], result)
        seen["vsearch_data"] = check(tools["vsearch"], result, None) if not result.is_error else None
    return seen


def test_the_instructions_and_results_follow_the_vector_state_over_http(
    cli: Callable, indexed: Path, model: Path, tmp_path: Path
):
    """One server, a session per state: none, quick, partial, full. Each session's instructions
    are written as it connects (an `embed` run meanwhile shows), and say what `vsearch` does."""
    with http_server(tmp_path) as server:
        url = server.url + "/mcp"

        none = anyio.run(_state, url)
        assert "- sample: 13 documents, 13 chunks; vectors none:" in none["instructions"]
        assert "`vsearch`: fails with NO_VECTORS" in none["instructions"]
        assert "`query`: keyword search fused with nothing else: keyword only" in none["instructions"]
        assert tool_error(none["vsearch"])["code"] == "NO_VECTORS"

        assert cli("embed", "--quick-only").exit_code == 0
        quick = anyio.run(_state, url)
        assert "vectors quick: all 13 chunks have a quick vector" in quick["instructions"]
        assert "`vsearch`: answers from quick vectors in sample" in quick["instructions"]
        assert "fails" not in quick["instructions"].split("`vsearch`:")[1].split("\n")[0]
        assert {w["code"] for w in quick["vsearch_data"]["warnings"]} == {"QUICK_VECTORS"}
        assert quick["results"][-1]["collections"][0]["vector_state"] == "quick"

        (indexed / "notes" / "later.md").write_text("# Later\n\nRestore the files later.\n", encoding="utf-8")
        assert cli("update").exit_code == 0
        partial = anyio.run(_state, url)
        assert "vectors partial:" in partial["instructions"]
        assert (
            "`vsearch`: answers from part of sample (0 of 14 chunks with full vectors, 13 with quick ones"
            in (partial["instructions"])
        )
        assert {"QUICK_VECTORS", "PENDING_VECTORS"} <= {
            w["code"] for w in partial["vsearch_data"]["warnings"]
        }

        assert cli("embed").exit_code == 0
        full = anyio.run(_state, url)
        assert "vectors full: all 14 chunks have their full vectors" in full["instructions"]
        assert "`vsearch`: answers from full vectors in sample." in full["instructions"]
        assert "For the user to run" not in full["instructions"]
        assert full["vsearch_data"]["warnings"] == []
        assert full["results"][1]["used"] == "keyword+vector"
