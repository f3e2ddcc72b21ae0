"""reStructuredText: underlined and overlined titles are headings (never fences), adornment levels
follow first appearance, literal blocks are kept whole, and Markdown files keep Markdown rules."""

from __future__ import annotations

import pytest

from tansaku.chunking import ChunkParams, Heading, chunk_text, headings
from test.test_chunking import EST, boundaries_inside, check_invariants

PARA = (
    "The interpreter reads the configuration once at start-up and keeps it for the whole run,\n"
    "so a change made later is only seen by the next process that starts.\n\n"
)
SMALL = ChunkParams(max_tokens=120, overlap_tokens=18, window_tokens=60)


def _path_at(heads: list[Heading], line: int) -> tuple[str, ...]:
    """The heading path in force at ``line``, worked out from ``headings()`` alone."""
    stack: list[Heading] = []
    for h in heads:
        if h.line > line:
            break
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
    return tuple(h.title for h in stack)


def _two_sections(char: str) -> str:
    return f"First part\n{char * 10}\n\n{PARA * 2}Second part\n{char * 11}\n\n{PARA * 4}"


@pytest.mark.parametrize("char", ["=", "-", "~", "^", '"', "'"])
def test_each_adornment_style_underlines_a_heading(char: str) -> None:
    text = _two_sections(char)
    assert headings(text, "guide.rst") == [Heading(1, 1, "First part"), Heading(10, 1, "Second part")]
    p = ChunkParams(max_tokens=120, overlap_tokens=0, window_tokens=60)
    result = chunk_text(text, "guide.rst", p)
    check_invariants(text, result, p)
    assert result.warnings == ()
    second = text.index("Second part")
    # The cut lands on the second title (score 100), not on a nearer blank line, and without an
    # overlap the next chunk starts there, under that title.
    assert second in {c.end_char for c in result.chunks}
    starting = [c for c in result.chunks if c.start_char == second]
    assert [c.heading_path for c in starting] == [("Second part",)]
    assert all(c.heading_path in {("First part",), ("Second part",)} for c in result.chunks)
    assert chunk_text(text, "guide.rst", SMALL).chunks[-1].heading_path == ("Second part",)


def test_an_overlined_title_is_a_style_of_its_own() -> None:
    text = (
        f"==========\n  Inset  title\n==========\n\n{PARA * 2}"
        f"Plain\n=====\n\n{PARA * 2}"
        f"##########\nPart two\n##########\n\n{PARA * 2}"
    )
    # Overlined "=" and underlined "=" are two styles; an inset title is stripped and its inner
    # spaces collapsed; "#" is as legal as any other punctuation.
    assert headings(text, "a.rst") == [
        Heading(1, 1, "Inset title"),
        Heading(11, 2, "Plain"),
        Heading(20, 3, "Part two"),
    ]
    blocks = [
        (0, text.index("\n\n") + 1),
        (text.index("#" * 10), text.index("\n\n", text.index("Part two")) + 1),
    ]
    for max_tokens in range(20, 80, 3):
        p = ChunkParams(max_tokens=max_tokens, overlap_tokens=max_tokens // 5, window_tokens=max_tokens // 2)
        result = chunk_text(text, "a.rst", p)
        check_invariants(text, result, p)
        assert result.chunks[0].heading_path == ("Inset title",)
        # Never cut between an overline, its title and its underline.
        assert boundaries_inside(result.chunks, blocks) == []
    paths = {c.heading_path for c in result.chunks}
    assert ("Inset title", "Plain") in paths and ("Inset title", "Plain", "Part two") in paths


def test_tilde_underline_is_a_heading_in_rst_and_a_fence_in_markdown() -> None:
    text = f"Intro\n=====\n\n{PARA * 3}Sub heading\n~~~~~~~~~~~\n\n{PARA * 12}"
    p = ChunkParams(max_tokens=150, overlap_tokens=20, window_tokens=60)

    rst = chunk_text(text, "notes.rst.txt", p)
    check_invariants(text, rst, p)
    assert rst.warnings == ()
    assert headings(text, ".rst.txt") == [Heading(1, 1, "Intro"), Heading(13, 2, "Sub heading")]
    assert rst.chunks[-1].heading_path == ("Intro", "Sub heading")
    assert text.index("Sub heading") in {c.end_char for c in rst.chunks}

    md = chunk_text(text, "notes.md", p)
    check_invariants(text, md, p)
    # CommonMark: the tilde line opens a fence that never closes, so it runs to the end.
    assert len(md.warnings) == 1 and md.warnings[0].startswith("fenced code block (lines 14-")
    assert headings(text, ".md") == [Heading(1, 1, "Intro")]
    assert {c.heading_path for c in md.chunks} == {("Intro",)}


def test_heading_paths_follow_levels_up_and_down() -> None:
    # "-" appears first, so it is level 1 here, and "=" is level 2: levels come from order.
    text = (
        f"Manual\n------\n\n{PARA}"
        f"Install\n=======\n\n{PARA}"
        f"On Linux\n^^^^^^^^\n\n{PARA}"
        f"From source\n'''''''''''\n\n{PARA}"
        f"Configure\n=========\n\n{PARA}"
        f"Appendix\n--------\n\n{PARA}"
    )
    heads = headings(text, "manual.rst")
    assert [(h.level, h.title) for h in heads] == [
        (1, "Manual"),
        (2, "Install"),
        (3, "On Linux"),
        (4, "From source"),
        (2, "Configure"),
        (1, "Appendix"),
    ]
    assert _path_at(heads, heads[3].line) == ("Manual", "Install", "On Linux", "From source")
    assert _path_at(heads, heads[4].line) == ("Manual", "Configure")
    p = ChunkParams(max_tokens=40, overlap_tokens=0, window_tokens=40)
    result = chunk_text(text, "manual.rst", p)
    check_invariants(text, result, p)
    for chunk in result.chunks:
        assert chunk.heading_path == _path_at(heads, chunk.start_line)
    assert {c.heading_path for c in result.chunks} >= {
        ("Manual", "Install", "On Linux", "From source"),
        ("Manual", "Configure"),
        ("Appendix",),
    }


def test_literal_blocks_are_kept_whole_and_their_lines_are_no_headings() -> None:
    code = "".join(f"    value_{i} = compute({i})  # step\n" for i in range(12))
    text = (
        f"Usage\n=====\n\n{PARA * 2}For example::\n\n{code}    not a title\n    -----------\n\n"
        f"{PARA * 2}.. code-block:: python\n   :linenos:\n\n{code.replace('    ', '   ')}\n"
        f"Options\n=======\n\n{PARA * 2}"
    )
    literal = (text.index("For example::"), text.index("\n\n", text.index("-----------")) + 1)
    directive = (text.index(".. code-block::"), text.index("\nOptions"))
    assert [h.title for h in headings(text, "a.rst")] == ["Usage", "Options"]
    need = max(EST.count(text[a:b]) for a, b in (literal, directive))
    for max_tokens in range(need, need + 150, 7):
        p = ChunkParams(max_tokens=max_tokens, overlap_tokens=max_tokens // 7, window_tokens=max_tokens // 2)
        result = chunk_text(text, "a.rst", p)
        check_invariants(text, result, p)
        assert result.warnings == ()
        assert boundaries_inside(result.chunks, [literal, directive]) == []


def test_a_literal_block_too_long_for_a_chunk_is_cut_with_a_warning() -> None:
    code = "".join(f"   print('line {i}')  # some code\n" for i in range(80))
    text = f"Code\n====\n\nIntro::\n\n{code}\nAfter.\n"
    p = ChunkParams(max_tokens=200, overlap_tokens=30, window_tokens=60)
    result = chunk_text(text, "big.rst", p)
    check_invariants(text, result, p)
    assert result.warnings and result.warnings[0].startswith("literal block (lines 4-85)")


def test_what_is_not_a_title() -> None:
    text = (
        "A paragraph of two lines,\nthe second one underlined\n-------------------------\n\n"
        "- a bullet item\n---------------\n\n"
        "=====  =====\nName   Value\n=====  =====\n\n"
        "Sh\n------------\n\n"  # short title, long underline: a title
        "Too long for it\n===\n\n"  # an underline shorter than its title and than 4 chars
        "----------\n\n"  # a transition
        "End.\n"
    )
    assert headings(text, "a.rst") == [Heading(12, 1, "Sh")]


def test_txt_files_use_rst_rules_only_when_they_look_like_rst() -> None:
    markdown = f"# Notes\n\n{PARA * 8}## More\n\n{PARA * 8}"
    assert chunk_text(markdown, "notes.txt", SMALL) == chunk_text(markdown, "notes.md", SMALL)
    assert [h.title for h in headings(markdown, "notes.txt")] == ["Notes", "More"]
    rst = f".. _notes:\n\nNotes\n~~~~~\n\n{PARA * 8}More\n~~~~\n\n{PARA * 8}"
    assert [h.title for h in headings(rst, "notes.txt")] == ["Notes", "More"]
    assert chunk_text(rst, "notes.txt", SMALL) == chunk_text(rst, "notes.rst", SMALL)
    assert chunk_text(rst, "notes.txt", SMALL).warnings == ()
    assert headings(rst, "notes.py") == [] and headings("", "a.rst") == []


def test_a_document_that_fits_in_one_chunk_gets_its_title() -> None:
    text = f"*******\n Title\n*******\n\n{PARA}"
    assert chunk_text(text, "a.rst").chunks[0].heading_path == ("Title",)
    assert chunk_text(f".. _x:\n\n{text}", "a.rst").chunks[0].heading_path == ()


def _whatsnew_like() -> str:
    """Shaped like Python's whatsnew/3.4.rst.txt: an overlined title, then "=" sections, "-"
    subsections and many "~" sub-subsections, with labels and literal blocks."""
    parts = ["****************************\n  What's New In Python 9.9\n****************************\n\n"]
    parts.append(":Author: Someone\n\n.. Rules for maintenance:\n\n   * Add text here.\n\n" + PARA * 3)
    for s in range(3):
        parts.append(f".. _section-{s}:\n\nSection {s}\n{'=' * 9}\n\n{PARA * 2}")
        for m in range(4):
            title = f"Module {s}.{m}"
            parts.append(f"{title}\n{'-' * len(title)}\n\n{PARA * 3}")
            for k in range(3):
                # The first "~" underline is the longest, as in the real file: in Markdown it
                # opens a fence that no later (shorter) underline closes.
                sub = "Bootstrapping the installer by default" if s == m == k == 0 else f"Feature {s}.{m}.{k}"
                example = "".join(f"   >>> feature_{k}({i})\n   {i}\n" for i in range(6))
                parts.append(f"{sub}\n{'~' * len(sub)}\n\n{PARA * 4}For example::\n\n{example}\n")
    return "".join(parts)


def test_whatsnew_like_document_is_cut_at_titles_without_fence_warnings() -> None:
    text = _whatsnew_like()
    assert EST.count(text) > 10 * 900
    heads = headings(text, "whatsnew/9.9.rst.txt")
    assert len(heads) == 1 + 3 + 12 + 36
    assert {h.level for h in heads if h.title.startswith(("Feature", "Bootstrapping"))} == {4}

    result = chunk_text(text, "whatsnew/9.9.rst.txt")
    check_invariants(text, result, ChunkParams())
    assert result.warnings == ()
    assert all(c.heading_path[0] == "What's New In Python 9.9" for c in result.chunks)
    for chunk in result.chunks:
        assert chunk.heading_path == _path_at(heads, chunk.start_line)
    title_starts = {text.index(f"\n{h.title}\n") + 1 for h in heads[1:]}
    ends = [c.end_char for c in result.chunks[:-1]]
    assert sum(e in title_starts for e in ends) >= len(ends) * 0.8, "cuts should fall on titles"
    assert any(len(c.heading_path) == 4 for c in result.chunks)
    # The literal blocks fit in a chunk, so none is cut.
    literals = [(m, text.index("\n\n", m + 15) + 1) for m in _find_all(text, "For example::")]
    assert len(literals) == 36 and boundaries_inside(result.chunks, literals) == []
    # What the issue reported: read as Markdown, the first "~" underline opens a fence that runs
    # to the end of the file, and the file is cut at bare line boundaries.
    md = chunk_text(text, "whatsnew.md")
    assert md.warnings == (
        "fenced code block (lines 44-1276) is longer than max_tokens (9035 estimated tokens); "
        "split at line boundaries",
    )


def _find_all(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + 1)
    return out
