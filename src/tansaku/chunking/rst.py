"""reStructuredText structure for chunking: underlined (and overlined) titles, transitions and
indented literal blocks.

reST has no ATX headings and no fences: a title is one line of text with an *adornment* under it
(optionally also over it), a line of one repeated punctuation character. The level of an
adornment style (its character, and whether it has an overline) is the order in which the styles
first appear in the document, as the reST specification defines; there is no fixed mapping.
So a ``~~~~`` line under a title is a heading here, where Markdown would open a fence.

A line scanner does all the work (no docutils): it follows the rules that matter for cutting and
accepts a little more than docutils where that is harmless (a title whose underline is short but
at least four characters long, which docutils accepts with a warning anyway).

Literal blocks (the indented block after a paragraph ending in ``::``, and the bodies of
``code-block`` and similar directives) are kept whole like Markdown fences when they fit in one
chunk; other directives (``.. note::``, ``.. function::``) are not guarded, since their bodies
are ordinary prose and can be much longer than a chunk.

Which files are reST is decided by name (``.rst``, ``.rst.txt``, ``.rest``) and, for other
``.txt`` files, by a look at the text: a ``.txt`` file without any reST-only construct keeps the
Markdown rules it always had (see ``is_rst``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from tansaku.chunking.markdown import (
    FRONT_MATTER_SCORE,
    HEADING_SCORES,
    RULE_SCORE,
    front_matter_end,
    heading_sections,
)
from tansaku.chunking.plan import Block, Plan
from tansaku.chunking.tokens import Ruler

RST_SUFFIXES = (".rst", ".rst.txt", ".rest")
# Any printable ASCII character that is not a letter, digit or space may adorn a title.
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1*")
# Directives whose body is literal text (code), not reST.
_LITERAL_DIRECTIVE = re.compile(
    r"[ \t]*\.\.[ \t]+(?:code-block|code|sourcecode|doctest|testcode|testoutput"
    r"|testsetup|testcleanup|productionlist)::",
)
# Lines that start a body element, not a title, even when an adornment line follows them:
# bullets, explicit markup (directives, comments, targets), doctest and line blocks.
_BODY_START = re.compile(r"(?:[-*+\u2022\u2023\u2043](?:[ \t]|$)|\.\.(?:[ \t]|$)|>>>|\|(?:[ \t]|$))")
# Signs that a .txt file is reST rather than Markdown: a directive, comment-target or
# hyperlink target at the start of a line; an overlined title; or a title underlined with a
# character that means nothing to Markdown after a paragraph line (=, -, *, _, ` do).
_RST_SIGN = re.compile(
    r"^(?:\.\.[ \t]+(?:[A-Za-z][\w:+-]*::|_[^\n:]+:)"
    r"|([!-/:-@\[-`{-~])\1{3,}[ \t\r]*\n[^\n]*\S[^\n]*\n\1{4,}[ \t\r]*$"
    r"|[^\s][^\n]*\n([!-),+./:-<>-@\[\\\]^{-~])\2{3,}[ \t\r]*$)",
    re.M,
)


def is_rst(text: str, path: str) -> bool:
    """True when ``path`` names a reST file, or a ``.txt`` file whose text shows reST markup.

    ``.txt`` is also where Markdown notes live, so a ``.txt`` file with none of the signs keeps
    Markdown semantics (and the chunks it had before reST was recognised).
    """
    name = path.lower()
    if name.endswith(RST_SUFFIXES):
        return True
    if not name.endswith(".txt"):
        return False
    return _RST_SIGN.search(text, front_matter_end(text)) is not None


@dataclass
class RstScan:
    """What the scanner found, as char offsets of line starts."""

    # (block start, block end, level, title): the block is overline (if any), title, underline
    titles: list[tuple[int, int, int, str]] = field(default_factory=list)
    transitions: list[int] = field(default_factory=list)
    literals: list[tuple[int, int]] = field(default_factory=list)  # (intro line start, end)


def _is_adornment(line: str) -> bool:
    return _ADORNMENT.fullmatch(line) is not None


def _width(s: str) -> int:
    """Columns ``s`` takes, wide East Asian characters counting two (as docutils measures)."""
    if s.isascii():
        return len(s)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _indent(line: str) -> int:
    """Columns of leading whitespace, tabs expanded to 8 as docutils does."""
    wide = line.expandtabs(8)
    return len(wide) - len(wide.lstrip())


def _fits(adornment: str, title: str) -> bool:
    # docutils accepts an adornment shorter than its title (with a warning) once it has 4 chars.
    return len(adornment) >= 4 or len(adornment) >= _width(title)


def scan(text: str, start: int = 0) -> RstScan:
    """Titles, transitions and literal blocks of ``text[start:]`` (``start`` is a line start)."""
    out = RstScan()
    lines = text[start:].split("\n")
    if start == 0 and lines[0].startswith("\ufeff"):
        lines[0] = " " + lines[0][1:]  # same length, and never part of an adornment
    offsets = [start]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    n = len(lines)
    end_of_text = len(text)

    def at(i: int) -> int:
        return min(offsets[i], end_of_text)

    styles: dict[tuple[str, bool], int] = {}

    def title(i: int, j: int, char: str, over: bool, words: str) -> None:
        level = styles.setdefault((char, over), len(styles) + 1)
        out.titles.append((at(i), at(j), level, " ".join(words.split())))

    stripped = [line.rstrip() for line in lines]
    after_blank = True  # the start of the text counts as "after a blank line"
    i = 0
    while i < n:
        line = stripped[i]
        if not line:
            after_blank = True
            i += 1
            continue
        if after_blank:
            if _is_adornment(line) and i + 2 < n:
                words = stripped[i + 1].strip()
                if words and stripped[i + 2] == line and not _is_adornment(words) and _fits(line, words):
                    title(i, i + 3, line[0], True, words)
                    i += 3
                    continue  # a title may follow a title directly: after_blank stays True
            if (
                not line[0].isspace()
                and i + 1 < n
                and not _is_adornment(line)
                and not _BODY_START.match(line)
            ):
                under = stripped[i + 1]
                if under and _is_adornment(under) and _fits(under, line):
                    title(i, i + 2, under[0], False, line)
                    i += 2
                    continue
            if _is_adornment(line) and len(line) >= 4 and (i + 1 >= n or not stripped[i + 1]):
                out.transitions.append(at(i))
                after_blank = False
                i += 1
                continue
        end = _literal_end(lines, stripped, i)
        if end > i + 1:
            out.literals.append((at(i), at(end)))
            i = end
        else:
            i += 1
        after_blank = False
    return out


def _literal_end(lines: list[str], stripped: list[str], i: int) -> int:
    """The line after the literal block introduced by line ``i``, or ``i + 1`` if there is none."""
    line = stripped[i]
    directive = _LITERAL_DIRECTIVE.match(line) is not None
    if not directive:
        if not line.endswith("::") or (_is_adornment(line) and line != "::"):
            return i + 1
        if line.lstrip().startswith(".."):
            return i + 1  # a directive or comment ending in "::" (".. note::"): its body is reST
        if i + 1 >= len(lines) or stripped[i + 1]:
            return i + 1  # reST wants a blank line between the paragraph and its literal block
    base = _indent(lines[i])
    last = i
    j = i + 1
    while j < len(lines):
        if stripped[j]:
            if _indent(lines[j]) <= base:
                break
            last = j
        j += 1
    # The block ends after its last indented line; blank lines after it belong to no one.
    return last + 1


def rst_plan(text: str, ruler: Ruler, budget: int) -> Plan:
    """Break points, guards and heading sections of a reST (or reST-looking plain text) document."""
    plan = Plan()
    fm_end = front_matter_end(text)
    found = scan(text, fm_end)

    def lines(start: int, end: int) -> str:
        last = text.count("\n", 0, max(end - 1, start)) + 1
        return f"lines {text.count(chr(10), 0, start) + 1}-{last}"

    def guard(start: int, end: int, what: Callable[[], str]) -> None:
        if ruler.tokens(start, end) <= budget:
            plan.guards.append((start, end))
        else:
            plan.loose.append(Block(start, end, what()))

    if fm_end:
        guard(0, fm_end, lambda: f"front matter ({lines(0, fm_end)})")
        plan.add_point(fm_end, FRONT_MATTER_SCORE)
    for start, end, level, _ in found.titles:
        # reST may nest deeper than six levels; the deepest keep the lowest heading score.
        plan.add_point(start, HEADING_SCORES[min(level, 6)])
        guard(start, end, lambda s=start, e=end: f"section title ({lines(s, e)})")
    for pos in found.transitions:
        plan.add_point(pos, RULE_SCORE)
    for start, end in found.literals:
        guard(start, end, lambda s=start, e=end: f"literal block ({lines(s, e)})")
    plan.sections = heading_sections([(s, lv, t) for s, _, lv, t in found.titles], len(text))
    plan.points.pop(0, None)
    plan.finish()
    return plan


def rst_headings(text: str) -> list[tuple[int, int, str]]:
    """(block start offset, level, title) of every title, exactly as ``rst_plan`` sees them."""
    return [(start, level, title) for start, _, level, title in scan(text, front_matter_end(text)).titles]


def leading_heading(text: str) -> tuple[str, ...]:
    """The heading path at offset 0 (for documents that fit in one chunk)."""
    if front_matter_end(text):
        return ()
    titles = scan(text).titles
    return (titles[0][3],) if titles and titles[0][0] == 0 else ()
