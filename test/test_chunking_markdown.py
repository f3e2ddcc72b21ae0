"""Markdown fixtures: cuts at headings, fences kept whole, overlap, CJK, setext, front matter,
long lines, and the other documents of fixtures/chunking/."""

from __future__ import annotations

import pytest

import tansaku.chunking.markdown as md_module
from tansaku.chunking import ChunkParams, chunk_text
from test.test_chunking import (
    EST,
    SMALL,
    boundaries_inside,
    check_invariants,
    fence_spans,
    line_at,
    read,
)


def test_long_section_is_cut_at_the_heading_not_mid_paragraph() -> None:
    text = read("long_section.md")
    result = chunk_text(text, "long_section.md")
    check_invariants(text, result, ChunkParams())
    first, second = result.chunks[:2]
    assert line_at(text, first.end_char) == "## Restoring a Snapshot"
    # The heading was chosen over blank lines closer to the 900-token target.
    assert first.tokens < 850
    assert second.heading_path == ("Backup Field Guide", "How a Backup Runs")
    assert result.chunks[-1].end_char == len(text)


def test_fences_are_never_split() -> None:
    text = read("fences.md")
    spans = fence_spans(text)
    assert len(spans) == 7
    for max_tokens in range(60, 400, 9):
        for window in (10, max_tokens // 3, max_tokens):
            p = ChunkParams(max_tokens=max_tokens, overlap_tokens=max_tokens // 7, window_tokens=window)
            result = chunk_text(text, "fences.md", p)
            check_invariants(text, result, p)
            assert len(result.chunks) > 1
            fitting = [(a, b) for a, b in spans if EST.count(text[a:b]) <= max_tokens]
            assert boundaries_inside(result.chunks, fitting) == []
            for chunk in result.chunks:
                assert "This line is inside the outer fence, not a heading." not in chunk.heading_path


def test_quoted_fences_and_html_blocks_follow_commonmark() -> None:
    section = "Some prose that fills the section with a few words.\n\n" * 6
    text = (
        f"# Alpha\n\n{section}> ```sh\n> # a shell comment\n>\n> make\n> ```\n\n{section}"
        f"<!--\n# commented out\n-->\n\n# Beta\n\n{section}<div>\n# inside html\n</div>\n\n{section}"
    )
    spans = fence_spans(text)
    assert len(spans) == 1
    for max_tokens in range(30, 120, 7):
        p = ChunkParams(max_tokens=max_tokens, overlap_tokens=max_tokens // 6, window_tokens=max_tokens // 2)
        result = chunk_text(text, "a.md", p)
        check_invariants(text, result, p)
        assert boundaries_inside(result.chunks, spans) == []
        assert {c.heading_path for c in result.chunks} <= {("Alpha",), ("Beta",)}


def test_fences_are_never_split_by_the_line_scanner_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(md_module, "_MD", False)
    text = read("fences.md")
    for max_tokens in (80, 120, 200):
        p = ChunkParams(max_tokens=max_tokens, overlap_tokens=15, window_tokens=max_tokens // 2)
        assert boundaries_inside(chunk_text(text, "fences.md", p).chunks, fence_spans(text)) == []


def test_a_fence_longer_than_max_tokens_is_split_at_lines_with_a_warning() -> None:
    body = "\n".join(f"print('line {i}')  # some code" for i in range(80))
    text = f"# Code\n\nIntro.\n\n```python\n{body}\n```\n\nAfter.\n"
    p = ChunkParams(max_tokens=200, overlap_tokens=30, window_tokens=60)
    result = chunk_text(text, "big.md", p)
    check_invariants(text, result, p)
    assert len(result.warnings) == 1 and "fenced code block (lines 5-86)" in result.warnings[0]
    for chunk in result.chunks[1:]:
        assert chunk.start_char == 0 or text[chunk.start_char - 1] == "\n"


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "# A\n\n" + "Para text here.\n\n" * 10 + "```\n" + "# not a heading\n\ncode\n" * 8
    p = ChunkParams(max_tokens=100, overlap_tokens=10, window_tokens=50)
    result = chunk_text(text, "a.md", p)
    fence_start = text.index("```")
    assert all(not (fence_start < c.end_char < len(text)) for c in result.chunks)
    assert all(c.heading_path == ("A",) for c in result.chunks)


def test_overlap_is_close_to_fifteen_percent() -> None:
    text = read("long_section.md") * 6
    result = chunk_text(text, "big.md")
    check_invariants(text, result, ChunkParams())
    overlaps = [
        EST.count(text[nxt.start_char : prev.end_char])
        for prev, nxt in zip(result.chunks, result.chunks[1:], strict=False)
    ]
    assert len(overlaps) >= 8
    # Snapped to a line start within half the overlap either way.
    assert all(135 // 2 <= o <= 135 + 135 // 2 + 1 for o in overlaps), overlaps
    assert 0.12 <= sum(overlaps) / len(overlaps) / 900 <= 0.18
    for chunk in result.chunks[1:]:
        assert text[chunk.start_char - 1] == "\n"


def test_cjk_chunks_are_near_max_tokens() -> None:
    text = read("cjk.md")
    result = chunk_text(text, "cjk.md")
    check_invariants(text, result, ChunkParams())
    assert len(result.chunks) >= 5
    for chunk in result.chunks[:-1]:
        assert 700 <= chunk.tokens <= 900
    assert result.chunks[1].heading_path[0] == "本地搜索工具说明"


def test_cjk_without_newlines_is_cut_after_punctuation() -> None:
    text = "".join(read("cjk.md").split())
    result = chunk_text(text, "cjk.md")
    check_invariants(text, result, ChunkParams())
    for chunk in result.chunks[:-1]:
        assert chunk.text[-1] in "。，、！？" and not chunk.oversized
        assert 700 <= chunk.tokens <= 900


def _setext_path_at(text: str, line: int) -> tuple[str, ...]:
    lines = text.split("\n")
    h1 = {"Release Notes": "Release Notes", "Upgrading": "Upgrading"}
    h2 = {"Version 3.2": "Version 3.2", "Version 3.1": "Version 3.1"}
    h2["A multi-line title"] = "A multi-line title for an old release"
    path: tuple[str, ...] = ()
    for number, content in enumerate(lines[:line], start=1):
        if content in h1:
            path = (h1[content],)
        elif content in h2:
            path = (path[0], h2[content])
        assert number <= line
    return path


def test_setext_headings() -> None:
    text = read("setext.md")
    seen = set()
    for max_tokens in (40, 50, 60, 80):
        p = ChunkParams(max_tokens=max_tokens, overlap_tokens=max_tokens // 7, window_tokens=max_tokens // 2)
        result = chunk_text(text, "setext.md", p)
        check_invariants(text, result, p)
        lines = text.split("\n")
        for chunk in result.chunks:
            assert chunk.heading_path == _setext_path_at(text, chunk.start_line)
            seen.add(chunk.heading_path)
            # Never between a heading's text (or its first line) and its underline.
            assert set(lines[chunk.start_line - 1].strip()) not in ({"="}, {"-"})
            assert lines[chunk.start_line - 1] != "for an old release"
    assert ("Release Notes", "A multi-line title for an old release") in seen
    assert ("Upgrading",) in seen
    # "* * *" after a blank line is a rule, not a heading: it is never in a path.
    assert all("* * *" not in path for path in seen)


def test_setext_headings_without_markdown_it(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = chunk_text(read("setext.md"), "setext.md", SMALL)
    monkeypatch.setattr(md_module, "_MD", False)
    assert chunk_text(read("setext.md"), "setext.md", SMALL) == expected


def test_front_matter_is_kept_whole_and_is_no_heading() -> None:
    text = read("front_matter.md")
    fm_end = text.index("---\n", 4) + 4
    p = ChunkParams(max_tokens=60, overlap_tokens=8, window_tokens=30)
    result = chunk_text(text, "notes.md", p)
    check_invariants(text, result, p)
    assert result.chunks[0].end_char == fm_end  # its end is a break point (60)
    assert result.chunks[0].heading_path == ()
    assert all("a YAML comment, not a heading" not in c.heading_path for c in result.chunks)
    # The path is the one in force where a chunk starts, overlap included.
    assert ("Bread", "Starter") in {c.heading_path for c in result.chunks}
    p = ChunkParams(max_tokens=60, overlap_tokens=0, window_tokens=30)
    assert chunk_text(text, "notes.md", p).chunks[-1].heading_path == ("Stock",)


def test_single_line_with_spaces_is_cut_at_whitespace() -> None:
    text = read("single_line.md")
    assert "\n" not in text
    result = chunk_text(text, "single_line.md")
    check_invariants(text, result, ChunkParams())
    assert len(result.chunks) >= 3
    for prev, nxt in zip(result.chunks, result.chunks[1:], strict=False):
        assert prev.text.endswith(" ") and not prev.oversized
        assert text[nxt.start_char - 1] == " " and nxt.start_char < prev.end_char
    assert all(c.tokens <= 900 for c in result.chunks)


def test_single_line_without_spaces_is_oversized() -> None:
    text = read("single_line_nospace.txt")
    result = chunk_text(text, "data.txt")
    check_invariants(text, result, ChunkParams())
    assert len(result.chunks) >= 3
    assert all(c.oversized for c in result.chunks)
    assert all(c.tokens <= 900 for c in result.chunks)


def test_oversized_marks_only_chunks_holding_the_long_line() -> None:
    text = "# Intro\n\n" + "Short line of prose here.\n" * 60 + "\n" + "x" * 5000 + "\n\nThe end.\n"
    p = ChunkParams(max_tokens=200, overlap_tokens=30, window_tokens=60)
    result = chunk_text(text, "a.md", p)
    check_invariants(text, result, p)
    long_start = text.index("x" * 10)
    for chunk in result.chunks:
        holds = chunk.start_char < long_start + 5000 and chunk.end_char > long_start
        assert chunk.oversized == holds


def test_no_split_inside_a_combining_sequence() -> None:
    text = ("e\u0301" * 3000) + "\n"
    p = ChunkParams(max_tokens=100, overlap_tokens=10, window_tokens=20)
    result = chunk_text(text, "a.md", p)
    check_invariants(text, result, p)
    for chunk in result.chunks:
        assert chunk.text[0] == "e"


def test_crlf_text() -> None:
    text = read("long_section.md").replace("\n", "\r\n")
    result = chunk_text(text, "crlf.md")
    check_invariants(text, result, ChunkParams())
    assert line_at(text, result.chunks[0].end_char) == "## Restoring a Snapshot\r"


def test_custom_counter_is_used_for_sizes() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    text = read("long_section.md")
    p = ChunkParams(max_tokens=200, overlap_tokens=30, window_tokens=60)
    result = chunk_text(text, "a.md", p, Words())
    check_invariants(text, result, p, Words())
    assert all(120 <= c.tokens <= 200 for c in result.chunks[:-1])


def test_unknown_types_and_code_under_regex() -> None:
    text = read("long_section.md")
    assert chunk_text(text, "notes.txt") == chunk_text(text, "notes.md")
    code = "# comment that is no heading\n" + "x = 1\n\n" * 400
    result = chunk_text(code, "a.py", ChunkParams(max_tokens=100, overlap_tokens=10, window_tokens=30))
    assert result.strategy_used == "regex" and result.warnings == ()
    assert all(c.heading_path == () for c in result.chunks)


def test_same_input_same_chunks() -> None:
    text = read("fences.md") + read("cjk.md")
    assert chunk_text(text, "a.md", SMALL) == chunk_text(text, "a.md", SMALL)
