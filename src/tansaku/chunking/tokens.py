"""Token counting: the ``TokenCounter`` protocol, a fast deterministic estimate, and ``Ruler``.

The estimate treats every Han, kana or Hangul character as one token and every other run of
characters as one token per four characters (rounded up per run). Real tokenizers differ, but the
estimate is stable across machines and versions, which matters more for chunk boundaries that are
stored in an index: the same input must always give the same chunks.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Protocol, runtime_checkable

from tansaku.text.cjk import CJK_CLASS

# One definition of the CJK ranges (tansaku.text.cjk loads its segmenter lazily, so importing it is cheap).
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_CJK_SPLIT = re.compile(f"([{CJK_CLASS}]+)")
CHARS_PER_TOKEN = 4


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class EstimatedTokens:
    """Deterministic token estimate: 1 per CJK character, ceil(len / 4) per run of anything else."""

    def count(self, text: str) -> int:
        if text.isascii():
            return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
        other = 0
        tokens = 0
        # split() leaves exactly the non-CJK runs (and empty strings between adjacent matches).
        for piece in _CJK_RUN.split(text):
            other += len(piece)
            tokens += (len(piece) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
        return tokens + len(text) - other

    def __repr__(self) -> str:
        return "EstimatedTokens()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EstimatedTokens)

    def __hash__(self) -> int:
        return hash(EstimatedTokens)


class Ruler:
    """Estimated-token distances between offsets of one text, without slicing it.

    The text is held as alternating runs (CJK / other). ``tokens(a, b)`` equals
    ``EstimatedTokens().count(text[a:b])`` exactly, because the runs of a slice are the runs of the
    text cut at ``a`` and ``b``; chunking can then measure candidate cuts in O(log runs) instead of
    re-counting strings.
    """

    __slots__ = ("_cums", "_first_cjk", "_n", "_starts", "total")

    def __init__(self, text: str) -> None:
        n = len(text)
        if text.isascii():
            self._starts, self._cums, self._first_cjk = [0], [0], False
            self._n = n
            self.total = (n + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
            return
        # With the capture group, split() alternates other / CJK pieces; only the first and last
        # piece can be empty. Runs then alternate kinds, so a run's kind is its index parity.
        pieces = _CJK_SPLIT.split(text)
        first_cjk = False
        if not pieces[0]:
            pieces.pop(0)
            first_cjk = True
        if pieces and not pieces[-1]:
            pieces.pop()
        lengths = list(map(len, pieces))
        tokens = [(length + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN for length in lengths]
        first = 0 if first_cjk else 1
        tokens[first::2] = lengths[first::2]
        self._starts = [0, *accumulate(lengths)]
        self._starts.pop()
        self._cums = [0, *accumulate(tokens)]
        self.total = self._cums.pop()
        self._first_cjk = first_cjk
        self._n = n

    def _is_cjk(self, i: int) -> bool:
        return (i & 1 == 0) == self._first_cjk

    def _end(self, i: int) -> int:
        return self._starts[i + 1] if i + 1 < len(self._starts) else self._n

    def _part(self, i: int, a: int, b: int) -> int:
        return b - a if self._is_cjk(i) else (b - a + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN

    def _run(self, pos: int) -> int:
        return bisect_right(self._starts, pos) - 1

    def tokens(self, a: int, b: int) -> int:
        """Estimated tokens of ``text[a:b]``."""
        if b <= a:
            return 0
        i = self._run(a)
        j = self._run(b - 1)
        if i == j:
            return self._part(i, a, b)
        starts = self._starts
        return (
            self._part(i, a, starts[i + 1]) + self._cums[j] - self._cums[i + 1] + self._part(j, starts[j], b)
        )

    def advance(self, a: int, budget: int) -> int:
        """The largest ``b`` with ``tokens(a, b) <= budget``."""
        if a >= self._n:
            return self._n
        i = self._run(a)
        end = self._end(i)
        first = self._part(i, a, end)
        if first > budget:
            return a + (budget if self._is_cjk(i) else budget * CHARS_PER_TOKEN)
        if i + 1 == len(self._starts):
            return self._n
        cums = self._cums
        base = cums[i + 1]
        rem = budget - first
        j = bisect_right(cums, base + rem, i + 1) - 1
        extra = rem - (cums[j] - base)
        end = self._end(j)
        if extra >= self._part(j, self._starts[j], end):
            return end
        return self._starts[j] + (extra if self._is_cjk(j) else extra * CHARS_PER_TOKEN)

    def back(self, b: int, budget: int) -> int:
        """The smallest ``a`` with ``tokens(a, b) <= budget``."""
        if b <= 0:
            return 0
        j = self._run(b - 1)
        start = self._starts[j]
        last = self._part(j, start, b)
        if last > budget:
            return b - (budget if self._is_cjk(j) else budget * CHARS_PER_TOKEN)
        if j == 0:
            return 0
        cums = self._cums
        rem = budget - last
        i = bisect_left(cums, cums[j] - rem, 0, j)
        if i == 0:
            return 0
        extra = rem - (cums[j] - cums[i])
        k = i - 1
        end = self._starts[i]
        return end - (extra if self._is_cjk(k) else extra * CHARS_PER_TOKEN)
