"""What the search page shows beside results, computed by the server (issue 39): the whole words
of the query's own terms to mark in snippets, and the index's counts after every search."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tansaku.api import Tansaku
from tansaku.search.snippets import term_spans


def marked(line: str, terms: list[str]) -> list[str]:
    return [line[a:b] for a, b in term_spans([[line]], terms)[0][0]]


@pytest.mark.parametrize(
    ("line", "terms", "words"),
    [
        # Whole words only: not the "a" of "binary", the "i" of "Checking", "search" in "research".
        ("Checking a binary search in research", ["binary", "search"], ["binary", "search"]),
        ("Checking a binary search", ["a"], ["a"]),
        ("Checking it", ["i"], []),
        # The snippet's light stemmer: the forms it matched are the forms marked.
        ("Restoring, restored and restores", ["restore"], ["Restoring", "restored", "restores"]),
        ("restore the restaurant", ["rest*"], ["restore", "restaurant"]),
        ("café and cafe", ["cafe"], ["café", "cafe"]),
        # A hyphenated name is one phrase; an option keeps its dash and its case.
        ("run ssh-keygen, not ssh alone", ["ssh keygen"], ["ssh-keygen"]),
        ("ls -a shows a lot; -A almost all", ["-a"], ["-a"]),
        # Identifiers split as the index splits them.
        ("call binary_search(items)", ["binary", "search"], ["binary", "search"]),
        ("nothing here", ["binary"], []),
        ("", ["binary"], []),
    ],
)
def test_latin_marks_are_whole_words(line: str, terms: list[str], words: list[str]) -> None:
    assert marked(line, terms) == words


@pytest.mark.cjk
def test_cjk_marks_are_the_segmenter_s_words() -> None:
    line = "中华人民共和国的文件权限"
    # 人民 is a word of the run as the index cuts it; 民共 is two characters of two words.
    assert marked(line, ["人民"]) == ["人民"]
    assert marked(line, ["民共"]) == []
    assert marked(line, ["权限"]) == ["权限"]
    # Latin words beside CJK text are words of their own, as segment() makes them.
    assert marked("用binary搜索", ["binary"]) == ["binary"]


@pytest.mark.cjk
def test_overlapping_and_adjacent_marks_merge() -> None:
    assert marked("文件权限", ["文件", "权限", "文件权限"]) == ["文件权限"]


def test_offsets_are_code_points() -> None:
    line = "𝔘𝔫𝔦 binary 😀 search"
    spans = term_spans([[line]], ["binary", "search"])[0][0]
    assert [line[a:b] for a, b in spans] == ["binary", "search"]
    assert spans[0] == (4, 10)  # not UTF-16 units: a front end in JavaScript converts


@given(st.lists(st.text(max_size=40), max_size=4), st.lists(st.text(max_size=8), max_size=3))
def test_spans_are_ordered_disjoint_and_inside_their_line(lines: list[str], terms: list[str]) -> None:
    for line, spans in zip(lines, term_spans([lines], terms)[0], strict=True):
        ends = [0]
        for start, end in spans:
            assert ends[-1] <= start < end <= len(line)
            ends.append(end)


def test_mark_terms_are_the_query_s_own(indexed: Path) -> None:
    api = Tansaku()
    # Common words are optional in a search, so never marked (unless nothing else is asked).
    assert api.mark_terms("how do I restore a snapshot") == ["restore", "snapshot"]
    assert api.mark_terms("how do I") == ["how", "do", "i"]
    assert api.mark_terms("文件权限") == api.mark_terms("文件权限", "vsearch") != []
    assert api.mark_terms("restore -snapshot") == ["restore"]  # an excluded word is not marked
    # `query`: the typed words, never an expansion's; a query document's lex lines.
    assert api.mark_terms("restore snapshot", "query") == ["restore", "snapshot"]
    document = "lex: restore snapshot\nvec: getting a lost file back"
    assert api.mark_terms(document, "query") == ["restore", "snapshot"]
    assert api.mark_terms("vec: getting a lost file back", "query") == ["getting", "lost", "file", "back"]
    with pytest.raises(ValueError):
        api.mark_terms("x", "chunks")


def test_the_index_summary_is_kept_until_the_index_changes(
    indexed: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tansaku.inspect import status

    api = Tansaku(keep_connections=True)
    counted: list[int] = []
    real = status.collection_list

    def counting(*args: Any) -> Any:
        counted.append(1)
        return real(*args)

    monkeypatch.setattr(status, "collection_list", counting)
    first = api.index_summary()
    assert (first.documents, first.chunks, first.vectors, first.vector_state) == (13, 13, 0, "none")
    assert [(c.name, c.documents) for c in first.collections] == [("sample", 13)]
    assert api.index_summary() is first and len(counted) == 1  # unchanged: nothing counted again
    (indexed / "notes" / "later.md").write_text("# Later\n\nmore notes\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    later = api.index_summary()
    assert later.documents == 14 and len(counted) == 2
    api.close()


def test_the_summary_of_no_index_is_empty(tmp_path: Path) -> None:
    summary = Tansaku().index_summary()
    assert (summary.documents, summary.vector_state, summary.collections) == (0, "none", ())
