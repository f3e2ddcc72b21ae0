"""Renderers: snapshots of every format plus checks a wrong renderer could not pass."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tansaku.errors import DocumentNotFound, UsageError
from tansaku.index.vector_state import VectorState
from tansaku.render import FORMATS, RenderOptions, render, render_error
from tansaku.types import (
    Collection,
    CollectionEmbed,
    CollectionInfo,
    CollectionUpdate,
    Context,
    DocumentSlice,
    EmbedReport,
    EmbedSpeed,
    FileEntry,
    Hit,
    HookRun,
    MultiGetResult,
    Notice,
    SearchResult,
    SkippedDocument,
    SkippedFile,
    Snippet,
    StatusReport,
    UpdateReport,
)

AWKWARD = "<&\"'> Tricky\x01 title"
TICKS = "````"


def hit(docid: str, title: str, path: str, lines: tuple[str, ...], **kw: object) -> Hit:
    vpath, dpath = f"tansaku://notes/{path}", f"/home/me/notes/{path}"
    made = Hit(docid, 0.823456, "notes", path, vpath, dpath, title, (), Snippet(9, lines), False, 2, 2)
    return replace(made, **kw)


def doc_slice(path: str, lines: tuple[str, ...], **kw: object) -> DocumentSlice:
    vpath, dpath = f"tansaku://notes/{path}", f"/home/me/notes/{path}"
    made = DocumentSlice(
        "abc123", "notes", path, vpath, dpath, AWKWARD, ("Personal notes",), 4096, 120, 9, lines, False
    )
    return replace(made, **kw)


FIRST_LINES = ("before <&\"'> after\x01", TICKS, "会議の議事録")
SEARCH = SearchResult(
    query='tricky "title"',
    mode="keyword",
    hits=(
        hit(
            "abc123",
            AWKWARD,
            "a&b/<x>\"y'.md",
            FIRST_LINES,
            contexts=("Personal notes", "Meetings & <minutes>"),
        ),
        hit("def456", "会議メモ", "会議/メモ.md", ("日本語のテキスト",), score=0.5, stale=True),
        hit("0a1b2c", "Full body", "full.md", ("ignored",), score=0.25, body="# Full body\n\nline ``x``\n"),
    ),
    total=37,
    limit=3,
    warnings=(Notice("SCHEMA_OLD", "index built by an older tansaku"),),
    took_ms=1.234567,
    collections=("notes",),
)
EMPTY_WARNING = Notice("COLLECTION_EMPTY", "collection 'notes' has no documents; run tansaku update")
EMPTY = SearchResult("nothing", "keyword", (), total=0, limit=5, warnings=(EMPTY_WARNING,))
ALL = SearchResult(query="x", mode="keyword", hits=SEARCH.hits[1:2], total=1, limit=None)

SLICE = doc_slice("a&b/<x>.md", ("line <&\"'>\x01", TICKS, "会議", "", "\ttab"), truncated=True, stale=True)
MULTI = MultiGetResult(
    pattern="notes/*.md",
    documents=(SLICE, doc_slice("short.md", ("only line",), docid="fff000", total_lines=1, from_line=1)),
    skipped=(
        SkippedDocument("tansaku://notes/big.md", 123456, "its text is 23456 bytes, over --max-bytes", 23456),
    ),
    max_bytes=10240,
    max_lines=5,
    warnings=(Notice("PARTIAL", "1 document skipped"),),
)
EMPTY_MULTI = MultiGetResult(pattern="none/*", documents=(), skipped=(), max_bytes=10240, max_lines=None)
# A text found at three paths, shown once (search/copies.py), a page in three languages, and
# `get #docid` of the first.
COPIES = SearchResult(
    query="alpha",
    mode="keyword",
    hits=(
        hit(
            "abc123",
            "Alpha",
            "alpha.md",
            ("# Alpha", "alpha text"),
            also_at=("tansaku://notes/link-to-alpha.md", "tansaku://work/alpha.md"),
        ),
        hit("def456", "Beta", "en/beta.md", ("beta text",), score=0.5, also_in=("fr", "pt-br")),
    ),
    total=2,
    limit=5,
    collections=("notes", "work"),
)
GET_COPIES = doc_slice(
    "alpha.md",
    ("# Alpha", "alpha text"),
    also_at=("tansaku://notes/link-to-alpha.md", "tansaku://work/alpha.md"),
)
SEARCHY = dict(search=SEARCH, empty=EMPTY, all=ALL, get=SLICE, multi=MULTI, multi_empty=EMPTY_MULTI)
SEARCHY |= dict(copies=COPIES, get_copies=GET_COPIES)

NOTES = Collection("notes", "/home/me/notes", ("**/*.md", "**/*.txt"), ("drafts/**",), "git pull")
INFO = CollectionInfo(NOTES, 42, "2024-05-01T12:34:56Z", 1_234_567)
WORK_INFO = CollectionInfo(Collection("仕事", "/srv/work", include=False), 3, None, 2048)
NOTES_UPDATE = CollectionUpdate(
    "notes", ["new.md"], ["a.md"], [("old.md", "new/old.md")], [], 10, ["latin1.md"],
    [SkippedFile("img.png", "binary")], HookRun("git pull", 0, "Already up to date.\n", ""),
    chunked=2, new_chunks=9, chunks=140, split_blocks=3, chunk_warnings=[
        "3 fenced code blocks longer than max_tokens were split at line boundaries, in 2 files"
        " (`tansaku chunks notes/PATH` shows where)",
        "code.xyz: no tree-sitter grammar for .xyz; used regex",
    ],
)  # fmt: skip
WORK_UPDATE = CollectionUpdate("work", failed="hook exited with 1", hook=HookRun("make", 1, "", "boom\n"))
UPDATE = UpdateReport(
    False, [NOTES_UPDATE, WORK_UPDATE], 12.5, [Notice("SLOW", "update took longer than usual")]
)
DRY_NOTES = CollectionUpdate(
    "notes", ["n.md"], removed=["gone.md"], unchanged=3, hook_pending="git pull", repaired=["latin1.md"],
    skipped=[SkippedFile("handbook/", "symlink-duplicate"), SkippedFile("a/up/", "symlink-loop")],
)  # fmt: skip
DRY = UpdateReport(dry_run=True, collections=[DRY_NOTES])
STATUS = StatusReport(
    "/home/me/.cache/tansaku/index.sqlite", True, 5_000_000, 1, 2, "/home/me/.config/tansaku/config.toml",
    (INFO, WORK_INFO), (Context("/", "My notes"), Context("tansaku://notes/m", "Meetings\nweekly")),
    ("notes: 2 files changed on disk",), (Notice("SCHEMA_MISMATCH", "run tansaku update --rebuild"),),
)  # fmt: skip
FILES = [
    FileEntry("tansaku://notes/a.md", "abc123", 120, "2024-05-01T12:34:56Z", "A"),
    FileEntry("tansaku://notes/会議.md", "def456", 98765, "2023-12-31T23:59:00Z", "会議"),
]
MESSAGE = {"missing": ["notes"], "message": "no context yet for:\n  notes"}
ADMIN = dict(
    update=UPDATE, dry_run=DRY, status=STATUS, collection_list=[INFO, WORK_INFO], collection_show=INFO
)
ADMIN |= dict(ls=FILES, context_list=list(STATUS.contexts), empty_list=[], message=MESSAGE, plain={"a": 1})
# The configured model's speed as `embed` measured it here, and the wait it makes of 1,200 chunks.
MEASURED = replace(
    STATUS,
    collections=(replace(INFO, chunks=1400, vectors=200, unembedded=1200), WORK_INFO),
    embed_model="/models/embeddinggemma-300M-Q8_0.gguf",
    embed_window=2046,
    embed_speed=EmbedSpeed(0.46, 0.52, 204, 443.5, "2026-12-02T17:50:03Z"),
    embed_pending_seconds=1200 / 0.46,
)
UNMEASURED = replace(STATUS, embed_model="/models/embeddinggemma-300M-Q8_0.gguf")
ADMIN |= dict(status_measured=MEASURED, status_unmeasured=UNMEASURED)
# An `embed --quick-only` run, and the status it leaves: every chunk searchable, none full yet.
QUICK_STATUS = replace(
    MEASURED,
    embed_window=2046,
    embed_budget=512,
    collections=(
        replace(
            INFO,
            chunks=1400,
            vectors=200,
            unembedded=1200,
            quick_vectors=1200,
            vector_state="partial",
            vector_state_note=VectorState(1400, 200, 1200).describe("notes", 56),
        ),
        WORK_INFO,
    ),
    pending=(
        "notes: 1200 chunks have no full vector yet (1200 are searched by a quick one);"
        " run `tansaku embed -c notes`",
    ),
)
QUICK_EMBED = EmbedReport(
    "/models/embeddinggemma-300M-Q8_0.gguf", "0123456789abcdef:embeddinggemma:c2", "embeddinggemma",
    768, 2046,
    [
        CollectionEmbed(
            "notes",
            pending=1200,
            quick=1200,
            state="quick",
            state_note=VectorState(1200, 0, 1200).describe("notes", 56),
        )
    ],
    budget_tokens=512, took_ms=81_000.0,
    chunks_per_second=0.0, peak_memory_mb=612.0,
)  # fmt: skip
ADMIN |= dict(status_quick=QUICK_STATUS, embed_quick=QUICK_EMBED)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", SEARCHY)
def test_search_and_get_snapshots(name: str, fmt: str, snapshot) -> None:
    out = render(SEARCHY[name], fmt)
    assert out == snapshot
    assert (out.endswith("\n") and not out.endswith("\n\n")) or (out == "" and fmt == "files")


@pytest.mark.parametrize("fmt", ["cli", "csv", "md", "files"])
@pytest.mark.parametrize("name", ["search", "get", "multi"])
def test_line_numbers_and_full_path_snapshots(name: str, fmt: str, snapshot) -> None:
    assert render(SEARCHY[name], fmt, RenderOptions(line_numbers=True, full_path=True)) == snapshot


@pytest.mark.parametrize("fmt", ["cli", "json"])
@pytest.mark.parametrize("name", ADMIN)
def test_admin_snapshots(name: str, fmt: str, snapshot) -> None:
    out = render(ADMIN[name], fmt)
    assert out == snapshot
    assert out.endswith("\n") and not out.endswith("\n\n")


@pytest.mark.parametrize("fmt", ["csv", "md", "xml", "files", "yaml"])
@pytest.mark.parametrize("name", ADMIN)
def test_admin_results_reject_other_formats(name: str, fmt: str) -> None:
    with pytest.raises(UsageError) as info:
        render(ADMIN[name], fmt)
    assert "cli" in (info.value.hint or "") and "json" in (info.value.hint or "")


def test_colour_only_when_asked(snapshot) -> None:
    for result in [*SEARCHY.values(), *ADMIN.values()]:
        assert "\x1b" not in render(result, "cli")
    coloured = render(SEARCH, "cli", RenderOptions(color=True))
    assert "\x1b[36mtansaku://notes/" in coloured and coloured.count("\x1b[0m") == 4 * len(SEARCH.hits)
    assert coloured == snapshot


def test_json_search_contract() -> None:
    data = json.loads(render(SEARCH, "json"))
    keys = {"query", "mode", "results", "total", "total_exact", "limit", "warnings", "took_ms", "collections"}
    assert set(data) == keys and data["took_ms"] == 1.2346 and data["limit"] == 3
    first, _, full = data["results"]
    hit_keys = {"docid", "score", "collection", "path", "virtual_path", "disk_path", "title", "contexts"}
    hit_keys |= {"snippet", "stale", "matched_terms", "total_terms"}
    assert set(first) == hit_keys and set(full) == hit_keys | {"body"}
    assert first["docid"] == "#abc123" and first["score"] == 0.8235 and first["title"] == AWKWARD
    assert first["snippet"] == {"start_line": 9, "lines": list(SEARCH.hits[0].snippet.lines)}
    assert full["body"] == SEARCH.hits[2].body
    assert data["warnings"] == [{"code": "SCHEMA_OLD", "message": SEARCH.warnings[0].message}]


def test_json_multi_and_admin_contract() -> None:
    data = json.loads(render(MULTI, "json"))
    assert list(data) == ["pattern", "documents", "skipped", "max_bytes", "max_lines", "warnings"]
    assert data["documents"][0]["lines"] == list(SLICE.lines) and data["documents"][0]["docid"] == "#abc123"
    assert data["skipped"] == [
        {
            "virtual_path": "tansaku://notes/big.md",
            "size": 123456,
            "reason": MULTI.skipped[0].reason,
            "text_bytes": 23456,
        }
    ]
    update = json.loads(render(UPDATE, "json"))
    assert update["ok"] is False and update["collections"][0]["moved"] == [["old.md", "new/old.md"]]
    assert json.loads(render(FILES, "json"))[0]["docid"] == "#abc123"
    assert json.loads(render(INFO, "json"))["collection"]["masks"] == ["**/*.md", "**/*.txt"]


def _rows(text: str) -> list[list[str]]:
    assert text.endswith("\r\n")
    return list(csv.reader(io.StringIO(text, newline="")))


def test_csv_round_trips() -> None:
    text = render(SEARCH, "csv")
    assert text.count("\r\n") == 4  # one per record; newlines inside cells stay bare \n
    rows = _rows(text)
    assert rows[0] == ["docid", "score", "collection", "path", "title", "context", "line", "snippet", "stale"]
    first = SEARCH.hits[0]
    contexts, snippet = "Personal notes | Meetings & <minutes>", "\n".join(first.snippet.lines)
    assert rows[1] == [
        "#abc123",
        "0.8235",
        "notes",
        first.virtual_path,
        AWKWARD,
        contexts,
        "9",
        snippet,
        "false",
    ]
    assert rows[2][-1] == "true" and rows[3][6:8] == ["1", "# Full body\n\nline ``x``"]
    multi = _rows(render(MULTI, "csv", RenderOptions(full_path=True)))
    assert multi[1] == ["#abc123", SLICE.disk_path, "9", SLICE.lines[0]]
    assert [r[3] for r in multi[1:6]] == list(SLICE.lines)
    assert multi[-1] == [
        "",
        "tansaku://notes/big.md",
        "",
        "SKIPPED: its text is 23456 bytes, over --max-bytes",
    ]
    assert _rows(render(EMPTY, "csv")) == [rows[0]]


def _parse_xml(text: str) -> ET.Element:
    root = ET.fromstring(text.encode("utf-8"))
    if shutil.which("xmllint"):
        subprocess.run(["xmllint", "--noout", "-"], input=text.encode(), check=True)
    return root


def test_xml_is_well_formed_and_faithful() -> None:
    root = _parse_xml(render(SEARCH, "xml"))
    assert root.tag == "search" and root.get("query") == SEARCH.query and root.get("limit") == "3"
    first = root.findall("result")[0]
    assert first.findtext("title") == AWKWARD.replace("\x01", "\ufffd")
    assert first.get("virtual_path") == SEARCH.hits[0].virtual_path and first.get("docid") == "#abc123"
    assert [c.text for c in first.findall("context")] == list(SEARCH.hits[0].contexts)
    assert first.find("snippet").text == "\n".join(SEARCH.hits[0].snippet.lines).replace("\x01", "\ufffd")
    assert root.find("warning").get("code") == "SCHEMA_OLD"
    assert _parse_xml(render(ALL, "xml")).get("limit") is None
    multi = _parse_xml(render(MULTI, "xml"))
    assert multi.find("document/text").text == "\n".join(SLICE.lines).replace("\x01", "\ufffd")
    assert multi.find("skipped").get("size") == "123456"


def _xml_char(ch: str) -> str:
    allowed = ch in "\t\n\r" or "\x20" <= ch <= "\ud7ff" or "\ue000" <= ch <= "\ufffd" or ch >= "\U00010000"
    return ch if allowed else "\ufffd"


def hit_result(title: str) -> SearchResult:
    return SearchResult("q", "keyword", (hit("a1", title, "p.md", (title,)),), total=1, limit=1)


@given(st.text(st.characters(exclude_categories=())))  # surrogates included on purpose
def test_xml_survives_any_text(value: str) -> None:
    result = replace(hit_result(value), query=value)
    root = ET.fromstring(render(result, "xml").encode("utf-8", "strict"))
    expected = "".join(_xml_char(ch) for ch in value)
    assert root.get("query") == expected and (root.find("result/title").text or "") == expected
    assert (root.find("result/snippet").text or "") == expected


def test_xml_replaces_forbidden_characters() -> None:
    bad = "a\x00b\ud800c\ufffed\uffffe\x7f\r\n"
    root = _parse_xml(render(hit_result(bad), "xml"))
    assert root.find("result/title").text == "a\ufffdb\ufffdc\ufffdd\ufffde\x7f\r\n"


@given(st.text())
def test_csv_survives_any_text(value: str) -> None:
    assert _rows(render(hit_result(value), "csv"))[1][4] == value


def test_markdown_fence_outgrows_backticks() -> None:
    out = render(SEARCH, "md")
    assert "\n`````\nbefore" in out and "## \\<\\&\"'\\> Tricky" in out


def test_cli_layout() -> None:
    out = render(SEARCH, "cli", RenderOptions(line_numbers=True))
    assert out.startswith("#abc123 0.82 tansaku://notes/a&b/<x>\"y'.md\n  <&\"'> Tricky\ufffd title\n")
    assert "  context: Personal notes\n  context: Meetings & <minutes>\n   9: before" in out
    assert "#def456 0.50 tansaku://notes/会議/メモ.md [stale]" in out and "  1: # Full body" in out
    assert out.endswith("older tansaku\n3 of 37 results (use -n or --all for more)\n")
    assert render(ALL, "cli").endswith("\n1 result\n")
    assert render(EMPTY, "cli").startswith("No results.\nwarning [COLLECTION_EMPTY]")


def test_get_cli_is_the_text() -> None:
    plain = render(doc_slice("p.md", ("a\x01", "b"), total_lines=2, from_line=1), "cli")
    assert plain == "a\x01\nb\n"
    numbered = render(SLICE, "cli", RenderOptions(line_numbers=True)).splitlines()
    assert numbered[0].startswith("[stale:") and numbered[1] == "  9: line <&\"'>\x01"
    assert numbered[-1] == "[truncated: showing lines 9-13 of 120; use --from/-l to read more]"


def test_errors() -> None:
    err = DocumentNotFound("no document #abc", hint="try tansaku ls", docid="abc")
    assert json.loads(render_error(err, "json")) == {"error": err.to_dict()}
    assert render_error(err, "cli") == "error: no document #abc\nhint: try tansaku ls\n"
    assert render_error(UsageError("bad"), "csv") == "error: bad\n"
    with pytest.raises(UsageError):
        render(SEARCH, "yaml")
