"""What a chunk's quick vector reads (index/quick_digest.py) and how `status`/`embed` name what
the vector side holds (index/vector_state.py): pure functions, a word-count tokenizer."""

from __future__ import annotations

from tansaku.index.quick_digest import MIN_PIECE, quick_window
from tansaku.index.vector_state import VectorState


def _words(text: str) -> int:
    return len(text.split()) + sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")


def _render(text: str) -> str:
    return "title: tmux | text: " + text


OPTIONS = [
    "OPTIONS",
    "       The following options are accepted by the command.",
    "",
    "       -a      Attach to the most recent session and keep every pane as it was left.",
    "       -z      Zoom the active pane so it fills the whole window until pressed again.",
    "",
    "       -s name  Give the session a name that other commands can refer to later on.",
    "",
    "       -x width Set the width of the window that a detached session is given by default.",
]


def test_a_quick_window_reads_the_start_of_every_paragraph_and_spans_the_chunk():
    window = quick_window(OPTIONS, 40, _render, _words, 60)
    assert _words(_render(window.text)) <= 60 < _words(_render("\n".join(OPTIONS)))
    lines = window.text.split("\n")
    # Each item starts a piece, the one below the first lines too: zoom is in the quick text.
    assert [line.split()[0] for line in lines] == ["OPTIONS", "-a", "-z", "-s", "-x"]
    assert all(_words(line) >= MIN_PIECE for line in lines[1:])
    # With less room, the pieces keep their minimum and the last paragraphs are left out.
    assert quick_window(OPTIONS, 40, _render, _words, 40).text.split("\n")[-1].startswith("-z")
    assert (window.start_line, window.end_line) == (40, 40 + len(OPTIONS) - 1)


def test_a_chunk_that_fits_whole_is_its_own_quick_window():
    window = quick_window(OPTIONS, 1, _render, _words, 500)
    assert window.text == "\n".join(OPTIONS)


def test_a_chunk_of_one_paragraph_keeps_its_head_and_chinese_is_cut_between_characters():
    window = quick_window(["权限文件系统组权限默认掩码" * 4], 1, str, _words, 8)
    assert window.text == "权限文件系统组"  # 7 characters and the run: 8 by this counter
    paragraphs = ["设置文件的默认权限掩码以及它如何影响新文件", "", "列出当前用户所属的全部组和它们的编号"]
    mixed = quick_window(paragraphs, 1, str, _words, 24)
    assert mixed.text.split("\n")[1].startswith("列出当前用户") and _words(mixed.text) <= 24


def test_the_vector_state_says_what_search_reads_now():
    assert VectorState(0, 0, 0).name == "none"
    assert VectorState(10, 0, 0).name == "none"
    assert VectorState(10, 0, 10).name == "quick"
    assert VectorState(10, 4, 6).name == "partial"
    assert VectorState(10, 0, 6).name == "partial"
    assert VectorState(10, 10, 0).name == "full"
    assert VectorState(10, 4, 3).describe("notes", 56) == (
        "partial: 4 of 10 chunks have full vectors, 3 a quick one, 3 none; `tansaku embed -c notes` continues"
    )
    assert "(56 tokens: title, headings and the first words of each paragraph)" in VectorState(
        10, 0, 10
    ).describe("notes", 56)
