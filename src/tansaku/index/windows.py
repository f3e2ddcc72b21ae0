"""The text a chunk is embedded as: its windows, the first window a budget keeps, and the
names a code chunk defines put at its head. Pure functions over a chunk's lines, a render function
(prompt, title, heading path) and a token counter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..chunking.outline import LABEL, MAX_NAMES, definitions
from ..models.prompts import PromptFormat


@dataclass(frozen=True)
class Window:
    text: str
    start_line: int
    end_line: int


def split_windows(
    lines: Sequence[str],
    first_line: int,
    render: Callable[[str], str],
    count: Callable[[str], int],
    limit: int,
) -> list[Window]:
    """Cut a chunk into windows whose rendered text fits ``limit`` tokens, at line boundaries
    (inside a line only when one line alone is too long). Never truncates: every line is in a window."""
    whole = "\n".join(lines)
    if count(render(whole)) <= limit:
        return [Window(whole, first_line, first_line + max(len(lines), 1) - 1)]
    windows: list[Window] = []
    current: list[str] = []
    start = first_line
    for offset, line in enumerate(lines):
        number = first_line + offset
        candidate = [*current, line]
        if count(render("\n".join(candidate))) <= limit:
            current = candidate
            continue
        if current:
            windows.append(Window("\n".join(current), start, number - 1))
        if count(render(line)) <= limit:
            current, start = [line], number
            continue
        windows.extend(Window(part, number, number) for part in _split_line(line, render, count, limit))
        current, start = [], number + 1
    if current:
        windows.append(Window("\n".join(current), start, start + len(current) - 1))
    return windows


def _split_line(
    line: str, render: Callable[[str], str], count: Callable[[str], int], limit: int
) -> list[str]:
    parts: list[str] = []
    words = line.split(" ")
    current = ""
    for word in words:
        candidate = f"{current} {word}" if current else word
        if count(render(candidate)) <= limit:
            current = candidate
            continue
        if current:
            parts.append(current)
        current = word
        while count(render(current)) > limit and len(current) > 1:
            # A run without spaces (CJK text, a long URL): halve by characters until it fits.
            cut = len(current) // 2
            head = current[:cut]
            while count(render(head)) > limit and len(head) > 1:
                head = head[: len(head) // 2]
            parts.append(head)
            current = current[len(head) :]
    if current:
        parts.append(current)
    return parts


def first_window(
    lines: Sequence[str],
    first_line: int,
    render: Callable[[str], str],
    count: Callable[[str], int],
    limit: int,
) -> Window:
    """The longest start of a chunk whose rendered text fits ``limit`` tokens: whole lines, then
    words of the next line (characters of a run without spaces), never nothing."""
    taken: list[str] = []
    for line in lines:
        if count(render("\n".join([*taken, line]))) <= limit:
            taken.append(line)
            continue
        lead = "\n".join(taken) + "\n" if taken else ""
        low = longest_prefix(line, lambda prefix, lead=lead: count(render(lead + prefix)) <= limit)
        if low:
            cut = line[:low]
            if " " in cut and low < len(line):
                cut = cut.rsplit(" ", 1)[0] or cut  # end at a word, where there is one
            taken.append(cut)
        break
    if not taken and lines:
        taken = [lines[0][:1]]
    return Window("\n".join(taken), first_line, first_line + max(len(taken), 1) - 1)


def longest_prefix(text: str, fits: Callable[[str], bool]) -> int:
    """The length of the longest start of ``text`` that ``fits`` accepts, by bisection (0: none)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


def render_document(prompt: PromptFormat, title: str, heading_path: tuple[str, ...], piece: str) -> str:
    return prompt.document(title, heading_path, piece)


def with_outline(
    render: Callable[[str], str], path: str, lines: Sequence[str], count: Callable[[str], int], budget: int
) -> Callable[[str], str]:
    """Where a budget cuts a code chunk, its text starts with the names it defines
    (chunking/outline.py), so a name defined past the cut still reaches the vector. They take at
    most half the budget and MAX_NAMES names; when all do not fit, the names past the cut go first."""
    names = definitions(path, lines)

    def fits(chosen: Sequence[str]) -> bool:
        return count(render(LABEL + "; ".join(chosen))) <= budget // 2

    if names and (len(names) > MAX_NAMES or not fits(names)):
        head = first_window(lines, 0, render, count, budget)
        shown = set(definitions(path, head.text.split("\n")))
        names = [n for n in names if n not in shown] + [n for n in names if n in shown]
        names = names[:MAX_NAMES]
        while names and not fits(names):
            names = names[: -max(1, len(names) // 4)]
    if not names:
        return render
    outline = LABEL + "; ".join(names)
    return lambda piece: render(f"{outline}\n{piece}")
