"""`query --pack`: passage choice, merging, the budget (pure), and the command in every format."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tansaku.hybrid.pack import (
    Passage,
    best_range,
    build_pack,
    candidate_count,
    chunk_around,
    fit_budget,
    merge_passages,
    passages_for,
)
from tansaku.store.chunks import StoredChunk
from tansaku.types import Hit, Notice, PackItem, SearchResult, Snippet

# --- pure: the budget --------------------------------------------------------------------------


def item(text: str, score: float = 0.5, path: str = "a.md", start: int = 1) -> PackItem:
    return PackItem(
        docid=path[:6],
        score=score,
        collection="c",
        path=path,
        virtual_path=f"tansaku://c/{path}",
        disk_path=f"/c/{path}",
        title=path,
        contexts=(),
        start_line=start,
        end_line=start + text.count("\n"),
        heading_path=(),
        text=text,
    )


def test_an_item_too_big_for_the_room_left_is_skipped_whole_and_a_smaller_one_still_fits() -> None:
    items = [item("a" * 60, 0.9), item("b" * 50, 0.8), item("c" * 30, 0.7)]
    taken, omitted = fit_budget(items, max_items=8, max_bytes=100)
    assert [i.text[0] for i in taken] == ["a", "c"]  # b (50) did not fit after a (60); c (30) did
    assert omitted == 1


def test_max_items_stops_taking_and_counts_the_rest() -> None:
    items = [item(str(n), 1 - n / 10) for n in range(5)]
    taken, omitted = fit_budget(items, max_items=2, max_bytes=10_000)
    assert [i.text for i in taken] == ["0", "1"] and omitted == 3


def test_bytes_are_utf8_bytes_not_characters() -> None:
    chinese = item("压缩" * 10)  # 20 characters, 60 bytes
    assert fit_budget([chinese], 8, 59) == ([], 1)
    assert fit_budget([chinese], 8, 60) == ([chinese], 0)


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=300), max_size=30),
    max_items=st.integers(min_value=1, max_value=10),
    max_bytes=st.integers(min_value=1, max_value=1500),
)
def test_the_budget_is_never_exceeded_and_no_item_is_cut(
    sizes: list[int], max_items: int, max_bytes: int
) -> None:
    items = [item("é" * (size // 2) + "x" * (size % 2), path=f"d{n}.md") for n, size in enumerate(sizes)]
    taken, omitted = fit_budget(items, max_items, max_bytes)
    assert sum(len(i.text.encode()) for i in taken) <= max_bytes
    assert len(taken) <= max_items
    assert all(any(t is i for i in items) for t in taken)  # the very items given: never cut or copied
    assert len(taken) + omitted == len(items)
    positions = [next(n for n, i in enumerate(items) if i is t) for t in taken]
    assert positions == sorted(positions)  # greedy in the given order
    # Greedy: anything left out either came after the item limit was reached or did not fit then.
    room, count = max_bytes, 0
    for candidate in items:
        size = len(candidate.text.encode())
        if any(candidate is t for t in taken):
            room, count = room - size, count + 1
        else:
            assert count == max_items or size > room


# --- pure: passages and merging --------------------------------------------------------------


def passage(start: int, count: int, heading: tuple[str, ...] = ()) -> Passage:
    return Passage(start, tuple(f"line {n}" for n in range(start, start + count)), heading)


def test_overlapping_and_adjacent_passages_merge_and_separate_ones_do_not() -> None:
    merged = merge_passages([passage(20, 5), passage(1, 10, ("A",)), passage(8, 6, ("B",)), passage(14, 2)])
    # 1-10 and 8-13 overlap, 14-15 touches 13: one span 1-15; 20-24 stands apart.
    assert [(p.start_line, p.end_line) for p in merged] == [(1, 15), (20, 24)]
    assert merged[0].lines == tuple(f"line {n}" for n in range(1, 16))  # each line once, in order
    assert merged[0].heading_path == ("A",)  # where the merged span starts
    assert [(p.start_line, p.end_line) for p in merge_passages([passage(1, 10), passage(3, 2)])] == [(1, 10)]


def hit(path: str, score: float, snippet_start: int = 1, chunk_lines: tuple[int, int] | None = None) -> Hit:
    return Hit(
        docid=path[:6],
        score=score,
        collection="c",
        path=path,
        virtual_path=f"tansaku://c/{path}",
        disk_path=f"/c/{path}",
        title=path.upper(),
        contexts=("ctx",),
        snippet=Snippet(snippet_start, ("s1", "s2", "s3")),
        chunk_lines=chunk_lines,
    )


def result(*hits: Hit) -> SearchResult:
    return SearchResult("q", "query", hits, len(hits), 20, warnings=(Notice("W", "w"),), used="keyword")


def test_a_document_listed_twice_gives_one_merged_item_with_its_best_score() -> None:
    spans = {0.9: passage(1, 10), 0.4: passage(11, 5), 0.6: passage(3, 4)}
    res = result(hit("a.md", 0.9), hit("b.md", 0.6), hit("a.md", 0.4))
    pack = build_pack(res, lambda h: [spans[h.score]], max_items=8, max_bytes=10_000)
    assert [(i.path, i.start_line, i.end_line, i.score) for i in pack.items] == [
        ("a.md", 1, 15, 0.9),
        ("b.md", 3, 6, 0.6),
    ]
    assert pack.omitted == 0 and pack.warnings == (Notice("W", "w"),) and pack.used == "keyword"


def test_items_come_in_score_order_and_bytes_used_adds_up() -> None:
    res = result(hit("a.md", 0.3), hit("b.md", 0.9), hit("c.md", 0.6))
    pack = build_pack(res, lambda h: [passage(1, 2)], max_items=2, max_bytes=10_000)
    assert [i.path for i in pack.items] == ["b.md", "c.md"]
    assert pack.omitted == 1
    assert pack.bytes_used == sum(len(i.text.encode()) for i in pack.items) == 2 * len("line 1\nline 2")
    assert pack.items[0].title == "B.MD" and pack.items[0].contexts == ("ctx",)


def test_a_pack_over_budget_leaves_items_out_whole() -> None:
    res = result(hit("a.md", 0.9), hit("b.md", 0.5))
    big, small = passage(1, 100), passage(1, 2)
    pack = build_pack(res, lambda h: [big if h.path == "a.md" else small], max_items=8, max_bytes=200)
    assert [i.path for i in pack.items] == ["b.md"] and pack.omitted == 1
    assert pack.items[0].text == "line 1\nline 2"


def chunk(seq: int, start: int, end: int, heading: tuple[str, ...] = ()) -> StoredChunk:
    return StoredChunk(seq, start, end, 0, 0, 0, 0, 10, heading, False)


def test_the_passage_is_the_stored_chunk_around_the_best_lines() -> None:
    chunks = [chunk(0, 1, 40, ("Intro",)), chunk(1, 35, 80, ("Usage",)), chunk(2, 75, 100, ("End",))]
    lines = [f"L{n}" for n in range(1, 101)]
    # A keyword hit whose snippet starts in the overlap (lines 35-40): the chunk holding more of it.
    keyword = hit("a.md", 0.5, snippet_start=39)
    assert best_range(keyword) == (39, 41)
    [found] = passages_for(keyword, chunks, lines)
    assert (found.start_line, found.end_line, found.heading_path) == (35, 80, ("Usage",))
    assert found.lines == tuple(lines[34:80])
    # A vector hit: the chunk of its chunk_lines (a window inside chunk 2), not its snippet's.
    vector = hit("a.md", 0.5, snippet_start=2, chunk_lines=(76, 90))
    assert passages_for(vector, chunks, lines)[0].start_line == 75
    # Two chunks hold the line equally: the earlier one.
    assert chunk_around(chunks, 36, 36) == chunks[0]


def test_without_stored_chunks_the_snippet_is_the_passage() -> None:
    found = passages_for(hit("a.md", 0.5, snippet_start=7), [], ["x"] * 20)
    assert found == [Passage(7, ("s1", "s2", "s3"))]


def test_the_candidates_outnumber_the_items() -> None:
    assert candidate_count(8) == 24 and candidate_count(2) == 20


# --- the command, on the sample collection ------------------------------------------------------


@pytest.mark.parametrize("fmt", ["cli", "json", "csv", "md", "xml", "files"])
def test_every_format_renders_a_real_pack(
    cli, fmt, snapshot, indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fixed missing model, so the MODEL_MISSING warning names no temporary folder and no default
    # model that may change; the sample's folder is replaced below as test_search.py does.
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", "/nonexistent/embed.gguf")
    cli("context", "add", "/", "Sample notes about backups")
    result = cli("query", "backups", "--pack", "--max-bytes", "1000", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.replace(str(indexed), "/SAMPLE") == snapshot
    if fmt == "xml" and shutil.which("xmllint"):
        subprocess.run(["xmllint", "--noout", "-"], input=result.stdout.encode(), check=True)


@pytest.mark.usefixtures("indexed")
def test_the_json_pack_keeps_its_budget_and_cites_real_lines(cli, indexed: Path) -> None:
    data = cli("query", "backups", "--pack", "--max-bytes", "1000", "--json").json()
    assert list(data) == [
        "query",
        "items",
        "bytes_used",
        "max_bytes",
        "max_items",
        "omitted",
        "warnings",
        "used",
    ]
    assert data["max_bytes"] == 1000 and data["max_items"] == 8
    assert data["items"] and data["omitted"] > 0  # the sample has more backup pages than fit
    assert data["bytes_used"] == sum(len(i["text"].encode()) for i in data["items"]) <= 1000
    assert "MODEL_MISSING" in [w["code"] for w in data["warnings"]] and data["used"] == "keyword"
    scores = [i["score"] for i in data["items"]]
    assert scores == sorted(scores, reverse=True)
    for entry in data["items"]:
        source = (indexed / entry["path"]).read_text(encoding="utf-8").split("\n")
        assert entry["text"] == "\n".join(source[entry["start_line"] - 1 : entry["end_line"]])
    everything = cli(
        "query", "backups", "--pack", "--max-bytes", "100000", "--max-items", "100", "--json"
    ).json()
    assert everything["omitted"] == 0
    assert len(everything["items"]) == len(data["items"]) + data["omitted"]
    assert (
        cli("query", "backups", "--pack", "--max-items", "1", "--json").json()["items"] == data["items"][:1]
    )


def test_a_long_document_gives_the_chunk_that_matched(cli, tmp_path: Path) -> None:
    notes = tmp_path / "long"
    notes.mkdir()
    parts = []
    for n in range(1, 13):
        body = [
            f"Paragraph {n}.{k} talks about ordinary weather and gardens at some length." for k in range(30)
        ]
        if n == 9:
            body[10] = "The zanzibar setting lives here."
        parts += [f"## Part {n}", "", *body, ""]
    (notes / "long.md").write_text("\n".join(["# Long", "", *parts]), encoding="utf-8")
    assert cli("collection", "add", notes, "--name", "long").exit_code == 0
    chunks = cli("chunks", "long/long.md", "--json").json()["chunks"]
    assert len(chunks) > 2
    [entry] = cli("query", "zanzibar", "--pack", "--json").json()["items"]
    spans = [(c["start_line"], c["end_line"], c["heading_path"]) for c in chunks]
    assert (entry["start_line"], entry["end_line"], entry["heading_path"]) in spans
    assert entry["start_line"] > 1 and "zanzibar" in entry["text"]
    # Without chunks for the collection's parameters (strategy changed, no update yet): the snippet.
    assert cli("collection", "set-chunk-strategy", "long", "auto").exit_code == 0
    [fallback] = cli("query", "zanzibar", "--pack", "--json").json()["items"]
    assert fallback["heading_path"] == [] and "zanzibar" in fallback["text"]
    assert fallback["end_line"] - fallback["start_line"] < entry["end_line"] - entry["start_line"]


@pytest.mark.usefixtures("indexed")
@pytest.mark.parametrize(
    "args",
    [
        ["--max-bytes", "100"],
        ["--max-items", "2"],
        ["--pack", "-n", "3"],
        ["--pack", "--all"],
        ["--pack", "--full"],
        ["--pack", "--explain"],
        ["--pack", "--max-bytes", "0"],
    ],
)
def test_options_that_do_not_size_a_pack_are_refused(cli, args: list[str]) -> None:
    result = cli("query", "backups", *args)
    assert result.exit_code == 2, result.stdout


@pytest.mark.usefixtures("indexed")
def test_the_terminal_pack_shows_each_citation_then_the_text(cli) -> None:
    text = cli("query", "backups", "--pack", "--max-bytes", "1000").stdout
    headers = re.findall(r"^\d\.\d\d #\w{6} tansaku://sample/\S+ lines \d+-\d+.*$", text, re.M)
    assert len(headers) == 2
    assert headers[0].startswith("1.00 ") and headers[0].endswith("lines 1-15 § Nightly backups")
    assert "  Backups run every night at 02:00" in text
    assert re.search(r"^2 passages, \d+ of 1000 bytes; \d+ more did not fit", text, re.M)
    numbered = cli("query", "backups", "--pack", "--max-items", "1", "--line-numbers").stdout
    assert " 3: Backups run every night" in numbered


@pytest.mark.usefixtures("indexed")
def test_a_pack_from_fused_results_cites_stored_chunks(cli, model: Path) -> None:
    assert cli("embed").exit_code == 0
    data = cli("query", "how do I get a deleted file back", "--pack", "--json").json()
    assert data["used"] == "keyword+vector" and data["items"]
    for entry in data["items"]:
        chunks = cli("chunks", entry["virtual_path"], "--json").json()["chunks"]
        spans = [
            (c["start_line"], c["end_line"], c["heading_path"], c["text"].removesuffix("\n")) for c in chunks
        ]
        assert (entry["start_line"], entry["end_line"], entry["heading_path"], entry["text"]) in spans
