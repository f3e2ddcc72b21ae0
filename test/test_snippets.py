from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tansaku.search.snippets import best_snippet, split_lines, term_matcher
from tansaku.types import Snippet

pytestmark = pytest.mark.both_backends


def numbered(count: int) -> str:
    return "\n".join(f"line {i}" for i in range(1, count + 1)) + "\n"


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\n\nb", ["a", "", "b"]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\rb\n", ["a\rb"]),
        (
            "page\x0cbreak\x0bvt\x1c\x1d\x1e\x85\u2028\u2029end\nnext",
            ["page\x0cbreak\x0bvt\x1c\x1d\x1e\x85\u2028\u2029end", "next"],
        ),
    ],
)
def test_split_lines(body: str, lines: list[str]) -> None:
    assert split_lines(body) == lines


@given(st.text())
def test_split_lines_agrees_with_newline_count(body: str) -> None:
    lines = split_lines(body)
    assert len(lines) == body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    assert "\n" not in "".join(lines)


@pytest.mark.parametrize(
    ("terms", "line", "score"),
    [
        (["indexing"], "The index indexes everything", 1),
        (["indexes"], "we were indexing", 1),
        (["running"], "I run daily", 1),
        (["queries"], "one query", 1),
        (["store"], "it was stored", 1),
        (["Hello"], "HELLO there", 1),
        (["cafe"], "un café noir", 1),
        (["café"], "un cafe noir", 1),
        (["ind*"], "the Index", 1),
        (["ind*"], "behind", 0),
        (["index"], "reindex", 0),
        (["exact phrase"], "an exact phrase here", 1),
        (["exact phrase"], "phrase exact", 0),
        (["foo", "bar", "baz"], "foo and bar", 2),
        (["foo", "foo", "FOO"], "foo", 1),
        (["压缩"], "文件压缩和权限管理", 1),
        (["压缩 文件"], "文件压缩", 1),
        (["压缩", "权限"], "文件压缩和权限管理", 2),
        (["が"], "これがテスト", 1),
        (["", "*", "!!!"], "anything", 0),
    ],
)
def test_term_matcher(terms: list[str], line: str, score: int) -> None:
    assert term_matcher(terms)(line) == score


def test_picks_best_line_with_window() -> None:
    body = numbered(10).replace("line 6", "alpha beta").replace("line 3", "alpha")
    assert best_snippet(body, ["alpha", "beta"]) == Snippet(
        6 - 1, ("line 5", "alpha beta", "line 7", "line 8")
    )


def test_first_line_wins_ties() -> None:
    body = "intro\nfoo one\nfoo two\n"
    assert best_snippet(body, ["foo"], before=0, after=0) == Snippet(2, ("foo one",))


def test_window_clipped_at_start_and_end() -> None:
    body = numbered(5)
    assert best_snippet(body, ["line 1"], before=3, after=1) == Snippet(1, ("line 1", "line 2"))
    assert best_snippet(body, ["line 5"], before=1, after=3) == Snippet(4, ("line 4", "line 5"))


def test_line_numbers_with_crlf_and_form_feed() -> None:
    body = "one\r\ntwo\x0cstill two\r\nthree\u2028still three\r\ntarget\r\n"
    snippet = best_snippet(body, ["target"], before=1, after=1)
    assert snippet == Snippet(3, ("three\u2028still three", "target"))


FRONT_MATTER = "---\ntitle: Findme\ntags: [x]\n---\n"


def test_front_matter_counts_only_without_other_matches() -> None:
    body = FRONT_MATTER + "\nintro\nbody mentions findme here\nafter\n"
    assert best_snippet(body, ["findme"], before=1, after=0) == Snippet(
        6, ("intro", "body mentions findme here")
    )
    assert best_snippet(body, ["tags"], before=1, after=1) == Snippet(
        2, ("title: Findme", "tags: [x]", "---")
    )


def test_body_window_does_not_reach_into_front_matter() -> None:
    body = FRONT_MATTER + "findme first\nsecond\n"
    assert best_snippet(body, ["findme"], before=2, after=0) == Snippet(5, ("findme first",))


def test_no_match_shows_first_non_blank_lines_after_front_matter() -> None:
    body = FRONT_MATTER + "\n\nfirst\nsecond\nthird\nfourth\nfifth\n"
    assert best_snippet(body, ["absent"]) == Snippet(7, ("first", "second", "third", "fourth"))
    assert best_snippet("\n\nhello\n", []) == Snippet(3, ("hello",))


def test_unclosed_front_matter_is_plain_text() -> None:
    body = "---\nnot front matter\nfindme\n"
    assert best_snippet(body, ["findme"], before=5, after=0) == Snippet(
        1, ("---", "not front matter", "findme")
    )


def test_degenerate_documents() -> None:
    assert best_snippet("", ["x"]) == Snippet(1, ())
    assert best_snippet("\n\n", ["x"]) == Snippet(1, ())
    # Blank lines at the edges of a window are trimmed; blank lines inside it stay.
    assert best_snippet("a\n\nneedle\n\nb\n", ["needle"], before=1, after=1) == Snippet(3, ("needle",))
    assert best_snippet("a\nneedle\n\nb\n", ["needle"], before=1, after=2) == Snippet(
        1, ("a", "needle", "", "b")
    )
    assert best_snippet(FRONT_MATTER, ["absent"], after=1) == Snippet(
        1, ("---", "title: Findme", "tags: [x]")
    )


def test_long_line_is_cut_around_first_match() -> None:
    line = "x" * 500 + " needle " + "y" * 500
    snippet = best_snippet(f"short\n{line}\n", ["needle"], before=1, after=0, max_line_chars=100)
    assert snippet.start_line == 1
    assert snippet.lines[0] == "short"
    shown = snippet.lines[1]
    assert len(shown) == 100
    assert shown.startswith("…") and shown.endswith("…")
    assert "needle" in shown


def test_long_line_cut_at_edges() -> None:
    head = "needle " + "y" * 500
    tail = "x" * 500 + " needle"
    shown_head = best_snippet(head, ["needle"], max_line_chars=50).lines[0]
    shown_tail = best_snippet(tail, ["needle"], max_line_chars=50).lines[0]
    assert shown_head == head[:49] + "…"
    assert shown_tail == "…" + tail[-49:]
    # Lines in the window without a match are cut from their start.
    other = best_snippet("z" * 80 + "\nneedle\n", ["needle"], max_line_chars=50).lines[0]
    assert other == "z" * 49 + "…"


def test_cjk_snippet() -> None:
    body = "# 标题\n\n这是介绍。\n我们讨论文件压缩和权限管理。\n结束\n"
    assert best_snippet(body, ["压缩", "权限"], before=0, after=0) == Snippet(
        4, ("我们讨论文件压缩和权限管理。",)
    )


@given(st.text(), st.lists(st.text(max_size=5), max_size=3), st.integers(0, 3), st.integers(0, 3))
def test_snippet_lines_come_from_the_document(body: str, terms: list[str], before: int, after: int) -> None:
    snippet = best_snippet(body, terms, before=before, after=after, max_line_chars=10_000)
    lines = split_lines(body)
    first = snippet.start_line - 1
    assert list(snippet.lines) == lines[first : first + len(snippet.lines)]
    assert len(snippet.lines) <= before + after + 1
