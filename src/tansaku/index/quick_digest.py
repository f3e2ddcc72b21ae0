"""The text of a chunk's quick vector: the start of each of its paragraphs, not only its head.

A quick vector may read about 56 tokens of a ~900-token chunk (the budget that gives 10,000
chunks their vectors in about 15 minutes on 2 cores). Spent on the chunk's first lines, it knows
nothing of the option items, definitions and paragraphs further down, which is where the answers
to questions about long pages sit (a man page's OPTIONS, a reference's entries). Spent on the
first words of every paragraph (each item and definition says what it is about first), it reads
a little of all of them. Measured with EmbeddingGemma (evals/RESULTS-embed.md, issue 37).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .windows import Window, first_window, longest_prefix

# The first paragraph keeps this share of the room (the chunk's head often names its topic); the
# others share the rest, each given at least MIN_PIECE tokens, in order, until the room is spent.
HEAD_SHARE = 0.5
MIN_PIECE = 10
# A line that starts an item (an option, a bullet) at the indent of the line before it or less,
# or a one-word line (a term) at a smaller one, starts a new paragraph even without a blank line.
_ITEM = re.compile(r"^\s{0,8}[-+*•]")
_TERM = re.compile(r"^\s{0,8}\S+\s*$")
_SPACES = re.compile(r"\s+")


def quick_window(
    lines: Sequence[str],
    first_line: int,
    render: Callable[[str], str],
    count: Callable[[str], int],
    limit: int,
) -> Window:
    """A window of at most ``limit`` rendered tokens made of the first tokens of each paragraph
    of the chunk (its lines), spanning the whole chunk. A chunk that fits whole is itself."""
    span = (first_line, first_line + max(len(lines), 1) - 1)
    joined = "\n".join(lines)
    if count(render(joined)) <= limit:
        return Window(joined, *span)
    paragraphs = _paragraphs(lines)
    room = limit - count(render(""))
    if len(paragraphs) < 2 or room < 2 * MIN_PIECE:
        return first_window(lines, first_line, render, count, limit)
    head_room = max(MIN_PIECE, int(room * HEAD_SHARE))
    head = _cut(paragraphs[0], head_room, count)
    pieces = [head]
    used = count(head)
    rest = paragraphs[1:]
    share = max(MIN_PIECE, (room - used) // len(rest))
    for paragraph in rest:
        if used + MIN_PIECE > room:
            break
        piece = _cut(paragraph, min(share, room - used), count)
        pieces.append(piece)
        used += count(piece)
    while len(pieces) > 1 and count(render("\n".join(pieces))) > limit:
        pieces.pop()  # tokens at the joins can add one or two
    text = "\n".join(pieces)
    if count(render(text)) > limit:
        return first_window(lines, first_line, render, count, limit)
    return Window(text, *span)


def _paragraphs(lines: Sequence[str]) -> list[str]:
    """The chunk's paragraphs, each as one line of single-spaced text."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if not line.strip():
            if current:
                blocks.append(current)
                current = []
            continue
        if current and _starts_item(line, current[-1]):
            blocks.append(current)
            current = []
        current.append(line)
    if current:
        blocks.append(current)
    return [_SPACES.sub(" ", " ".join(block)).strip() for block in blocks]


def _starts_item(line: str, previous: str) -> bool:
    indent, before = _indent(line), _indent(previous)
    return bool((_ITEM.match(line) and indent <= before) or (_TERM.match(line) and indent < before))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _cut(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """The longest start of ``text`` of at most ``tokens`` tokens, ending at a word where the
    text has spaces (a run without them, CJK text, is cut between characters)."""
    if count(text) <= tokens:
        return text
    low = longest_prefix(text, lambda prefix: count(prefix) <= tokens)
    cut = text[:low]
    space = cut.rfind(" ")
    return cut[:space] if space > len(cut) * 0.6 else cut
