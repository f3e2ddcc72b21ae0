"""What a document parser tells the cutter: scored break points, guarded spans and sections."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """A heading's reach (to the next heading of the same or a higher level) or a definition's body."""

    start: int  # char offset of the line where it begins
    end: int  # char offset where it stops being in force
    title: str | None  # None: ask Plan.titler (titles are rarely needed, so found lazily)


@dataclass(frozen=True)
class Block:
    """A span that must not be cut (a fence, front matter) but is too long to keep whole."""

    start: int
    end: int
    what: str  # for the warning, e.g. "fenced code block at lines 3-90"


@dataclass
class Plan:
    """Break points and constraints for one document.

    ``points`` are line starts with their structural score (headings, fences, definitions...).
    Weaker points (after a blank line, list items, any line start) are found by the cutter inside
    each look-back window only, which is far cheaper than listing every line of a large document.
    A cut strictly inside a guarded span is never chosen; ``loose`` spans would be guarded but do
    not fit in one chunk, so they may be cut at line starts (with a warning).
    """

    strategy: str = "regex"
    markdown: bool = True  # list items score as break points
    points: dict[int, int] = field(default_factory=dict)
    guards: list[tuple[int, int]] = field(default_factory=list)
    loose: list[Block] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    titler: Callable[[int], str] | None = None
    _point_pos: list[int] = field(default_factory=list, init=False, repr=False)
    _guard_starts: list[int] = field(default_factory=list, init=False, repr=False)

    def add_point(self, pos: int, score: int) -> None:
        if score > self.points.get(pos, 0):
            self.points[pos] = score

    def finish(self) -> None:
        """Sort what the parser collected; call once before cutting."""
        self.guards.sort()
        self.sections.sort(key=lambda s: (s.start, -s.end))
        self._point_pos = sorted(self.points)
        self._guard_starts = [g[0] for g in self.guards]

    def points_between(self, a: int, b: int) -> list[tuple[int, int]]:
        """Structural points p with a <= p <= b, in order."""
        pos = self._point_pos
        i = bisect_right(pos, a - 1)
        out = []
        while i < len(pos) and pos[i] <= b:
            out.append((pos[i], self.points[pos[i]]))
            i += 1
        return out

    def guard_at(self, pos: int) -> tuple[int, int] | None:
        """The guarded span that ``pos`` lies strictly inside, if any."""
        i = bisect_right(self._guard_starts, pos) - 1
        if i >= 0:
            start, end = self.guards[i]
            if start < pos < end:
                return start, end
        return None


def _title(section: Section, titler: Callable[[int], str] | None) -> str:
    if section.title is not None or titler is None:
        return section.title or ""
    return titler(section.start)


def section_paths(
    sections: list[Section], starts: list[int], titler: Callable[[int], str] | None = None
) -> list[tuple[str, ...]]:
    """The titles of the sections in force at each (ascending) offset in ``starts``, outer first."""
    out: list[tuple[str, ...]] = []
    active: list[Section] = []
    i = 0
    for pos in starts:
        while i < len(sections) and sections[i].start <= pos:
            active.append(sections[i])
            i += 1
        active = [s for s in active if s.end > pos]
        out.append(tuple(_title(s, titler) for s in active))
    return out
