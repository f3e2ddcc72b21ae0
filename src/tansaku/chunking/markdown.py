"""Markdown structure for chunking: headings, fences, rules, front matter.

Parsing 40 MB with markdown-it-py takes seconds (about 0.4 ms per 4 KB document), so a line
scanner does the work for ordinary documents, and markdown-it (CommonMark) parses only those where
the scanner sees something it cannot settle alone: a setext underline, an indented fence (in a list
item, usually), a heading or fence inside a block quote, an HTML block. Without markdown-it
installed the scanner's best effort is used for those too. Only documents that need cutting are
scanned at all.

YAML front matter (a leading ``---`` line up to the next ``---`` or ``...`` line) is not Markdown:
it is never a heading or rule, is kept whole like a fence, and its end is a break point (60).
"""

from __future__ import annotations

import importlib.util
import re
from bisect import bisect_right
from collections.abc import Callable
from itertools import chain
from typing import Any

from tansaku.chunking.plan import Block, Plan, Section
from tansaku.chunking.tokens import Ruler

HEADING_SCORES = {1: 100, 2: 90, 3: 80, 4: 70, 5: 60, 6: 50}
FENCE_SCORE = 80
RULE_SCORE = 60
FRONT_MATTER_SCORE = 60

_FRONT_OPEN = re.compile(r"\ufeff?---[ \t\r]*\n")
_FRONT_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t\r]*(?:\n|\Z)", re.M)
# Lines that can matter, each found right after its "\n" (a literal first character lets the
# regex engine skip ahead fast); the first line is matched separately.
_BODY = (
    r"(?:(?P<atx>[ ]{0,3}#{1,6})(?=[ \t\r]|$)"
    r"|(?P<fence>`{3,}|~{3,})"
    r"|(?P<under>[ ]{0,3}(?:=+|-+)[ \t\r]*)$"
    r"|(?P<hr>[ ]{0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,}))\r?$"
    # Left to CommonMark: headings and fences in block quotes, HTML blocks (their content is not
    # Markdown), and indented fences, which usually belong to list items and end with them.
    r"|(?P<cx>[ ]{0,3}>[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*(?:#{1,6}(?:[ \t]|$)|`{3,}|~{3,})"
    r"|[ ]{0,3}<[A-Za-z/!?]"
    r"|(?P<nested>[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)+|[ \t]+)(?:`{3,}|~{3,})))"
)
# The lookahead rejects ordinary lines (starting with a letter) at their first character.
_LINE_AFTER_NL = re.compile(r"\n(?=[ \t#`~=*_<>\d+-])" + _BODY, re.M)
_LINE_AT_START = re.compile(_BODY, re.M)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_QUOTE = re.compile(r"[ ]{0,3}>")
_LIST_MARKERS = re.compile(r"^[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
# HTML blocks whose end is a marker rather than a blank line (CommonMark types 1-5).
_HTML_RAW = re.compile(
    r"[ ]{0,3}<(?:(?i:(script|pre|style|textarea))(?:[ \t>]|$)|(!--)|(\?)|(![A-Za-z])|(!\[CDATA\[))"
)
_HTML_ENDS = ("</{}>", "-->", "?>", ">", "]]>")
_BLANK_LINE = re.compile(r"\n[ \t\r]*(?:\n|$)")


def front_matter_end(text: str) -> int:
    """Offset just after a leading YAML front matter block (``---`` ... ``---``), else 0."""
    m = _FRONT_OPEN.match(text)
    if m is None:
        return 0
    close = _FRONT_CLOSE.search(text, m.end())
    return close.end() if close else 0


def heading_title(text: str, pos: int) -> str:
    """The title of the ATX heading whose line starts at ``pos``."""
    body = text[pos : _line_end(text, pos)].strip().lstrip("#")
    return _ATX_CLOSE.sub("", body).strip()


def _strip_list_marker(line: str) -> str:
    return line if line[:1] in "`~" else _LIST_MARKERS.sub("", line)


def _line_end(text: str, pos: int) -> int:
    """Offset of the next line start after ``pos`` (or the end of the text)."""
    i = text.find("\n", pos)
    return len(text) if i < 0 else i + 1


class _Scan:
    """Result of the line scanner: headings, fences and rules as (offset, ...) tuples."""

    def __init__(self) -> None:
        # (line start, level, title); an ATX title is None until needed (see heading_title)
        self.headings: list[tuple[int, int, str | None]] = []
        self.setext: list[tuple[int, int]] = []  # (first text line start, line start after underline)
        self.fences: list[tuple[int, int]] = []  # (opening line start, line start after closing)
        self.rules: list[int] = []
        self.complex_at: list[int] = []  # lines only CommonMark can settle
        self.top_headings: list[int] = []  # ATX headings in column 0: nothing spans them
        self.open_fence_at_end = False  # CommonMark only: a fence is still open where the text ends


def _scan(text: str, start: int) -> _Scan:
    out = _Scan()
    n = len(text)
    fence: tuple[int, str, int, bool] | None = None  # (line start, marker char, length, nested)
    prev_special = -1  # line start of the last line the scanner recognised
    html_until = -1  # the end of an HTML block: its lines are not Markdown
    first_at = start + 1 if start == 0 and text.startswith("\ufeff") else start
    first = _LINE_AT_START.match(text, first_at)
    for m in chain((first,) if first else (), _LINE_AFTER_NL.finditer(text, start)):
        kind = m.lastgroup
        pos = start if m is first else m.start() + 1
        if pos < html_until:
            continue
        if fence is not None:
            if kind == "fence" or (kind == "cx" and m.group("nested")):
                # Only a bare marker of the same kind, at least as long, and indented at most
                # three spaces (unless the fence itself was nested), closes a fence.
                end = _line_end(text, pos)
                line = text[pos:end]
                indent = len(line) - len(line.lstrip(" "))
                marker = _strip_list_marker(line.strip()) if fence[3] else line.strip()
                closes = fence[3] or indent <= 3
                if closes and marker and marker.count(fence[1]) == len(marker) >= fence[2]:
                    out.fences.append((fence[0], end))
                    fence = None
                    prev_special = pos
            continue
        nested = False
        if kind == "cx":
            out.complex_at.append(pos)
            if m.group("nested") is None:
                if text[pos : pos + 4].lstrip(" ").startswith("<"):
                    html_until = _html_end(text, pos)
                prev_special = pos
                continue
            kind = nested = "fence"  # fallback: treat a fence in a list item like any other
        if kind == "atx":
            out.headings.append((pos, m.group("atx").count("#"), None))
            if text[pos] == "#":
                out.top_headings.append(pos)
        elif kind == "fence":
            line = text[pos : _line_end(text, pos)]
            info = _strip_list_marker(line.strip())
            char = info[0]
            length = len(info) - len(info.lstrip(char))
            if char == "`" and "`" in info[length:]:
                continue  # an info string with a backtick: inline code, not a fence
            fence = (pos, char, length, bool(nested))
        elif kind == "under":
            char = m.group("under").strip()[0]
            para = _paragraph_start(text, pos, prev_special, start)
            if para is not None:
                out.complex_at.append(para)  # setext headings are confirmed by CommonMark
                title = " ".join(t.strip() for t in text[para : pos - 1].split("\n"))
                out.headings.append((para, 1 if char == "=" else 2, title))
                out.setext.append((para, _line_end(text, pos)))
            elif char == "-" and m.group("under").count("-") >= 3:
                out.rules.append(pos)
        elif kind == "hr":
            out.rules.append(pos)
        prev_special = pos
    if fence is not None:
        out.fences.append((fence[0], n))  # an unclosed fence runs to the end of the document
    return out


def _html_end(text: str, pos: int) -> int:
    """Where the HTML block starting at ``pos`` ends (the start of the line after it)."""
    raw = _HTML_RAW.match(text, pos)
    if raw is None:  # other HTML blocks run to a blank line
        blank = _BLANK_LINE.search(text, pos)
        return len(text) if blank is None else blank.start() + 1
    kind = raw.lastindex or 1
    marker = _HTML_ENDS[kind - 1].format(raw.group(1) if kind == 1 else "")
    found = re.compile(re.escape(marker), re.IGNORECASE).search(text, raw.end())
    return len(text) if found is None else _line_end(text, found.start())


def _paragraph_start(text: str, under: int, prev_special: int, floor: int) -> int | None:
    """Where the paragraph underlined at ``under`` starts, or None if the line above is no paragraph.

    Lines of a list item or block quote above the underline make it a rule or plain text, as
    CommonMark's lazy continuation rules do.
    """
    pos = under
    first: int | None = None
    while pos > floor:
        line_start = text.rfind("\n", 0, pos - 1) + 1
        line = text[line_start : pos - 1]
        if not line.strip() or line_start <= prev_special:
            break
        if _LIST_ITEM.match(line) or _QUOTE.match(line):
            return None
        first = line_start
        pos = line_start
    if first is not None and text.startswith(("    ", "\t"), first):
        return None  # an indented code block, not a paragraph
    return first


def _commonmark_available() -> bool:
    # Checked without importing: most documents never need the parser.
    global _MD
    if _MD is None and importlib.util.find_spec("markdown_it") is None:
        _MD = False
    return _MD is not False


def _markdown_it() -> Any | None:
    global _MD
    if _MD is None:
        try:
            from markdown_it import MarkdownIt
        except ImportError:
            _MD = False
        else:
            md = MarkdownIt("commonmark")
            # Block structure is all that matters; inline parsing would double the cost.
            md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)
            _MD = md
    return _MD or None


_MD: Any = None


def _commonmark_scan(md: Any, text: str, start: int, end: int) -> _Scan:
    """What CommonMark finds in ``text[start:end]``, a run of whole lines."""
    # markdown-it treats a lone "\r" as a line break; our lines end at "\n" only.
    src = text[start:end].replace("\r", " ")
    if src.startswith("\ufeff"):
        src = " " + src[1:]
    starts = [start]
    find = text.find
    i = find("\n", start, end)
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1, end)

    def at(line: int) -> int:
        return starts[line] if line < len(starts) else end

    out = _Scan()
    tokens = md.parse(src)
    for k, tok in enumerate(tokens):
        if tok.map is None:
            continue
        first, last = tok.map
        if tok.type == "heading_open":
            title = tokens[k + 1].content.strip() if k + 1 < len(tokens) else ""
            title = " ".join(t.strip() for t in title.split("\n"))
            out.headings.append((at(first), int(tok.tag[1]), title))
            if tok.markup in ("=", "-"):
                out.setext.append((at(first), at(last)))
        elif tok.type == "fence":
            out.fences.append((at(first), at(last)))
            if at(last) >= end:
                closing = text[at(last - 1) : end].strip() if last - first > 1 else ""
                marker = tok.markup[:1]
                out.open_fence_at_end = not (closing and closing == marker * len(closing) >= tok.markup)
        elif tok.type == "hr":
            out.rules.append(at(first))
    return out


def _best_scan(text: str, start: int) -> _Scan:
    """The line scanner's answer, with CommonMark's for the parts the scanner cannot settle.

    Column-0 ATX headings outside fences end every open block, so the document is cut there
    into segments and only the segments holding something doubtful are parsed.
    """
    scan = _scan(text, start)
    if not scan.complex_at or not _commonmark_available():
        return scan
    md = _markdown_it()
    if md is None:  # found but not importable: the scanner's best effort must do
        return scan
    bounds = [start, *scan.top_headings, len(text)]
    doubtful: list[tuple[int, int]] = []
    for pos in scan.complex_at:
        i = bisect_right(bounds, pos) - 1
        segment = (bounds[i], bounds[i + 1])
        if not doubtful or doubtful[-1] != segment:
            doubtful.append(segment)
    seg_starts: list[int] = []

    def kept(pos: int) -> bool:
        i = bisect_right(seg_starts, pos) - 1
        return i < 0 or pos >= doubtful[i][1]

    # The scanner can miss a fence (an HTML block it misjudged may swallow the opening line) and
    # then take a "# line" inside it for a top heading: a segment whose parse ends inside a fence
    # grows to the next top heading until the fence closes.
    parsed: list[tuple[int, int, _Scan]] = []
    for a, b in doubtful:
        if parsed and a < parsed[-1][1]:
            continue  # inside a segment that grew
        part = _commonmark_scan(md, text, a, b)
        while part.open_fence_at_end and b < len(text):
            b = bounds[bisect_right(bounds, b)]
            part = _commonmark_scan(md, text, a, b)
        parsed.append((a, b, part))
    doubtful = [(a, b) for a, b, _ in parsed]
    seg_starts = [a for a, _ in doubtful]

    out = _Scan()
    out.headings = [h for h in scan.headings if kept(h[0])]
    out.setext = [x for x in scan.setext if kept(x[0])]
    out.fences = [x for x in scan.fences if kept(x[0])]
    out.rules = [x for x in scan.rules if kept(x)]
    for _, _, part in parsed:
        out.headings += part.headings
        out.setext += part.setext
        out.fences += part.fences
        out.rules += part.rules
    out.headings.sort(key=lambda h: h[0])
    return out


def markdown_plan(text: str, ruler: Ruler, budget: int) -> Plan:
    """Break points, guards and heading sections of a Markdown (or unknown-type) document."""
    plan = Plan()
    n = len(text)
    fm_end = front_matter_end(text)
    scan = _best_scan(text, fm_end)

    def guard(start: int, end: int, what: Callable[[], str]) -> None:
        if ruler.tokens(start, end) <= budget:
            plan.guards.append((start, end))
        else:
            plan.loose.append(Block(start, end, what()))

    def lines(start: int, end: int) -> str:
        last = text.count("\n", 0, max(end - 1, start)) + 1
        return f"lines {text.count(chr(10), 0, start) + 1}-{last}"

    if fm_end:
        guard(0, fm_end, lambda: f"front matter ({lines(0, fm_end)})")
        plan.add_point(fm_end, FRONT_MATTER_SCORE)
    for pos, level, _title in scan.headings:
        plan.add_point(pos, HEADING_SCORES[level])
    for start, end in scan.setext:
        guard(start, end, lambda s=start, e=end: f"setext heading ({lines(s, e)})")
    for start, end in scan.fences:
        plan.add_point(start, FENCE_SCORE)
        guard(start, end, lambda s=start, e=end: f"fenced code block ({lines(s, e)})")
    for pos in scan.rules:
        plan.add_point(pos, RULE_SCORE)
    plan.sections = heading_sections(scan.headings, n)
    plan.titler = lambda pos: heading_title(text, pos)
    plan.points.pop(0, None)
    plan.finish()
    return plan


def heading_sections(headings: list[tuple[int, int, str | None]], n: int) -> list[Section]:
    """Each heading reaches to the next heading of the same or a higher level."""
    out: list[Section] = []
    open_: list[tuple[int, int, str | None]] = []
    for pos, level, title in sorted(headings, key=lambda h: h[0]):
        while open_ and open_[-1][1] >= level:
            s, _, t = open_.pop()
            out.append(Section(s, pos, t))
        open_.append((pos, level, title))
    out.extend(Section(s, n, t) for s, _, t in open_)
    return out


def markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """(line start offset, level, title) of every heading, exactly as ``markdown_plan`` sees them."""
    scan = _best_scan(text, front_matter_end(text))
    return [
        (pos, level, title if title is not None else heading_title(text, pos))
        for pos, level, title in scan.headings
    ]


def leading_heading(text: str) -> tuple[str, ...]:
    """The heading path at offset 0, looking only at the first block (for one-chunk documents)."""
    if front_matter_end(text):
        return ()
    blank = re.search(r"\n[ \t\r]*\n", text)
    head = text if blank is None else text[: blank.start() + 1]
    scan = _best_scan(head, 0)
    return tuple(title or heading_title(text, 0) for pos, _, title in scan.headings[:1] if pos == 0)
