"""Choosing cuts: the scored look-back window, the overlap, and the fallbacks for long lines."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from tansaku.chunking.plan import Plan
from tansaku.chunking.tokens import Ruler, TokenCounter

BLANK_SCORE, LIST_SCORE, LINE_SCORE = 20, 5, 1
DECAY = 0.7
# Inside one long line: whitespace, and CJK punctuation, since CJK prose has no spaces.
SEPARATORS = " \t\u3000\u3001\u3002\uff01\uff0c\uff1a\uff1b\uff1f"
_WEAK_MD = re.compile(r"^(?:(?P<blank>[ \t\r]*\n)|[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t\r\n]|$))", re.M)
_WEAK_CODE = re.compile(r"^(?P<blank>[ \t\r]*\n)", re.M)
_COMBINING = frozenset({"Mn", "Me", "Mc"})


@dataclass
class Span:
    start: int
    end: int
    tokens: int


def _splits_cluster(text: str, pos: int) -> bool:
    """True when a cut at ``pos`` would separate a character from what attaches to it."""
    ch, prev = text[pos], text[pos - 1]
    return (
        unicodedata.category(ch) in _COMBINING
        or ch in "\u200d\ufe0e\ufe0f"
        or prev == "\u200d"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"  # skin-tone modifiers
        or ("\udc00" <= ch <= "\udfff" and "\ud800" <= prev <= "\udbff")  # a surrogate pair
        or (prev == "\r" and ch == "\n")
    )


class Cutter:
    def __init__(
        self,
        text: str,
        plan: Plan,
        ruler: Ruler,
        max_tokens: int,
        overlap: int,
        window: int,
        counter: TokenCounter | None,
        scale: float,
    ) -> None:
        self.text = text
        self.n = len(text)
        self.plan = plan
        self.ruler = ruler
        self.max_tokens = max_tokens
        self.counter = counter
        self.scale = scale
        # Everything below is in estimated tokens; ``scale`` maps a custom counter onto them.
        self.budget = max(1, int(max_tokens / scale))
        self.window = max(1, round(window / scale))
        self.overlap = round(overlap / scale) if overlap else 0
        self.hard_lines: list[tuple[int, int]] = []  # lines that had to be cut mid-word

    def count(self, a: int, b: int) -> int:
        if self.counter is None:
            return self.ruler.tokens(a, b)
        return self.counter.count(self.text[a:b])

    def cut(self) -> list[Span]:
        n = self.n
        spans: list[Span] = []
        start = 0
        prev_end = 0
        while True:
            if self.ruler.tokens(start, n) <= self.budget:
                k = self.count(start, n)
                if k <= self.max_tokens:
                    spans.append(Span(start, n, k))
                    return spans
            lo = max(start, prev_end)
            found = self._cut_from(start, lo)
            if found is None:
                # The overlap put a guarded block out of reach of any cut: start afresh at ``lo``.
                start = lo
                continue
            end, k = found
            spans.append(Span(start, end, k))
            if end >= n:
                return spans
            prev_end = end
            start = self._overlap_start(start, end)

    def _cut_from(self, start: int, lo: int) -> tuple[int, int] | None:
        """The end of the chunk starting at ``start`` (past ``lo``) and its size in tokens."""
        budget = self.budget
        while True:
            end = self._choose(start, lo, budget)
            if end is None:
                return None
            k = self.count(start, end)
            if k <= self.max_tokens:
                return end, k
            if end - start <= 1:
                self._mark_hard(start)  # one character over the limit: nothing left to cut
                return end, k
            # A custom counter disagreed with the estimate here: shrink in proportion.
            budget = min(budget - 1, self.ruler.tokens(start, end) * self.max_tokens // k)
            if budget < 1:
                if start < lo:
                    return None
                end = self._hard_cut(start, start + 1)
                return end, self.count(start, end)

    # -- the cut -----------------------------------------------------------------------------

    def _choose(self, start: int, lo: int, budget: int) -> int | None:
        ruler = self.ruler
        target = ruler.advance(start, budget)
        if target >= self.n:
            return self.n
        wlo = max(ruler.back(target, self.window), lo + 1)
        best, best_value = -1, -1.0
        if wlo <= target:
            for pos, score in self._candidates(wlo, target):
                d = ruler.tokens(pos, target)
                value = score * (1.0 - (d / self.window) ** 2 * DECAY)
                if value > best_value or (value == best_value and pos > best):
                    best, best_value = pos, value
        if best > 0:
            return best
        pos = self._last_line_start(lo, target)
        if pos is not None:
            return pos
        if start < lo and (target <= lo or self.plan.guard_at(target) is not None):
            return None  # only a chunk starting at ``lo`` itself can reach past this block
        pos = self._separator_before(lo, target)
        if pos is not None:
            return pos
        return self._hard_cut(lo, target)

    def _candidates(self, a: int, b: int) -> list[tuple[int, int]]:
        text, plan = self.text, self.plan
        out = [(p, s) for p, s in plan.points_between(a, b) if plan.guard_at(p) is None]
        weak = _WEAK_MD if plan.markdown else _WEAK_CODE
        scan_from = text.rfind("\n", 0, max(a - 1, 0)) + 1
        for m in weak.finditer(text, scan_from, min(self.n, b + 64)):
            if m.lastgroup == "blank":
                pos, score = m.end(), BLANK_SCORE
            else:
                pos, score = m.start(), LIST_SCORE
            if a <= pos <= b and plan.guard_at(pos) is None:
                out.append((pos, score))
        i = text.rfind("\n", a - 1, b)
        if i >= 0 and plan.guard_at(i + 1) is None:
            out.append((i + 1, LINE_SCORE))
        return out

    def _last_line_start(self, lo: int, target: int) -> int | None:
        """The last line start in (lo, target] outside guarded spans."""
        i = self.text.rfind("\n", lo, target)
        if i < 0:
            return None
        guard = self.plan.guard_at(i + 1)
        if guard is None:
            return i + 1
        return guard[0] if guard[0] > lo else None

    def _separator_before(self, lo: int, target: int) -> int | None:
        """The position just after the last whitespace (or CJK punctuation) in [lo, target)."""
        text = self.text
        j = max(text.rfind(ch, lo, target) for ch in SEPARATORS)
        return j + 1 if j >= lo else None

    def _hard_cut(self, start: int, target: int) -> int:
        text, n = self.text, self.n
        pos = min(target, n)
        while pos > start + 1 and pos < n and _splits_cluster(text, pos):
            pos -= 1
        if pos < n and _splits_cluster(text, pos):
            pos = min(target, n)
            while pos < n and _splits_cluster(text, pos):
                pos += 1
        self._mark_hard(pos)
        return pos

    def _mark_hard(self, pos: int) -> None:
        """Remember the line around ``pos``: the chunks holding it are oversized."""
        text, n = self.text, self.n
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        line = (line_start, n if line_end < 0 else line_end + 1)
        if not self.hard_lines or self.hard_lines[-1] != line:
            self.hard_lines.append(line)

    # -- the overlap -------------------------------------------------------------------------

    def _overlap_start(self, start: int, end: int) -> int:
        """Where the next chunk starts: ``overlap`` tokens before ``end``, moved to a line start
        (or else a word start) within half the overlap either way; never inside a guarded span."""
        # Leave the next chunk room to reach past ``end``, or it could not make progress.
        overlap = min(self.overlap, self.budget - 1)
        if overlap <= 0:
            return end
        ruler, text, plan = self.ruler, self.text, self.plan
        floor = max(start + 1, ruler.back(end, self.budget - 1))
        ideal = max(ruler.back(end, overlap), floor)
        if ideal >= end:
            return end
        tol = max(1, overlap // 2)
        lo = max(floor, ruler.back(ideal, tol))
        hi = min(end - 1, ruler.advance(ideal, tol))
        options: list[int] = []
        i = text.rfind("\n", lo - 1, ideal)
        if i >= 0:
            options.append(i + 1)
        j = text.find("\n", ideal, hi)
        if j >= 0:
            options.append(j + 1)
        allowed = []
        for pos in options:
            guard = plan.guard_at(pos)
            if guard is None:
                allowed.append(pos)
                continue
            allowed.extend(p for p in guard if lo <= p <= hi)
        if allowed:
            return min(allowed, key=lambda p: (ruler.tokens(min(p, ideal), max(p, ideal)), -p))
        guard = plan.guard_at(ideal)
        if guard is not None:
            return guard[1] if guard[1] < end else end
        # One long line around the ideal start: begin at a word if there is one nearby.
        before = max(text.rfind(ch, lo - 1, ideal) for ch in SEPARATORS)
        after = [k for k in (text.find(ch, ideal, hi) for ch in SEPARATORS) if k >= 0]
        # (rfind/find return -1 when absent, which the range check below discards)
        words = [p for p in (before + 1, min(after, default=-2) + 1) if start < p < end]
        if words:
            return min(words, key=lambda p: (ruler.tokens(min(p, ideal), max(p, ideal)), -p))
        pos = ideal
        while pos > lo and _splits_cluster(text, pos):
            pos -= 1
        return pos if not _splits_cluster(text, pos) else end
