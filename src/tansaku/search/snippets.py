"""Choose the lines of a document to show under a search hit.

FTS5 already decided that the document matches; this module only has to find the line that best
shows why, so matching here is approximate by design: a light English stemmer instead of porter,
substring matching for CJK, phrases matched word by word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from tansaku.text.cjk import has_cjk
from tansaku.types import Snippet

# Combining marks belong to the word: decomposed "naïve" is one word, not "nai" and "ve".
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
_ELLIPSIS = "…"
_FRONT_MATTER_OPEN = "---"
_FRONT_MATTER_CLOSE = ("---", "...")
# Longest first, so "es" wins over "s"; "ies"/"ied" are rewritten to "y" (queries → query).
_SUFFIXES = ("ing", "ies", "ied", "ed", "es", "ly", "s")
_ES_AFTER = ("s", "x", "z", "ch", "sh")  # "es" is a suffix only after these (boxes, but not files)
_KEEP_DOUBLE = "lsz"  # porter's exception: falling → fall, not fal


def split_lines(body: str) -> list[str]:
    """Split on ``\\n`` only, dropping a trailing ``\\r``, so line numbers agree with editors.

    ``str.splitlines`` would also break on form feeds, ``\\x1c``-``\\x1e``, NEL and the Unicode line and
    paragraph separators, which editors show inside a line. A final newline does not start a line.
    """
    lines = body.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\r" not in body:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _fold(word: str) -> str:
    word = word.lower()
    if word.isascii():
        return word
    # Mirror remove_diacritics: "café" must meet "cafe".
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _stem(word: str) -> str:
    """A light stem of a folded word: enough to make indexing, indexes and indexed agree."""
    if word.isascii() and word.isalpha():
        word = _strip_suffix(word)
        # store, stored and storing all become "stor".
        if len(word) > 3 and word.endswith("e"):
            word = word[:-1]
    return word


def _strip_suffix(word: str) -> str:
    for suffix in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        stem = word[: -len(suffix)]
        if suffix in ("ies", "ied"):
            return stem + "y"
        if suffix == "es" and not stem.endswith(_ES_AFTER):
            continue
        if suffix == "s" and stem.endswith(("s", "u", "i")):
            return word  # class, status, analysis: the "s" belongs to the word
        doubled = len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in _KEEP_DOUBLE
        if suffix in ("ing", "ed") and doubled:
            return stem[:-1]  # running → run, stopped → stop
        return stem
    return word


@dataclass(frozen=True)
class _Term:
    """One query term prepared for matching against lines."""

    stems: tuple[str, ...]  # latin terms: consecutive words; the last is a raw prefix if ``prefix``
    pieces: tuple[str, ...]  # CJK terms: lower-cased pieces that must all occur as substrings
    prefix: bool
    probe: str  # a substring every matching line contains, to skip most lines cheaply


def _prepare(term: str) -> _Term | None:
    term = term.strip()
    prefix = term.endswith("*")
    term = term.rstrip("*")
    if has_cjk(term):
        pieces = tuple(term.lower().split())
        return _Term((), pieces, prefix, pieces[0]) if pieces else None
    words = [_fold(word) for word in _WORD.findall(term)]
    if not words:
        return None
    stems = [_stem(word) for word in words[:-1]]
    stems.append(words[-1] if prefix else _stem(words[-1]))
    first = stems[0]
    # A stem is a prefix of every word it came from, bar the "y" of "ies" → "y".
    probe = first if len(stems) == 1 and prefix else first[:-1] or first
    return _Term(tuple(stems), (), prefix, probe)


# Natural text repeats a small vocabulary, so caching makes scanning a large document cheap.
@lru_cache(maxsize=1 << 16)
def _analyse(word: str) -> tuple[str, str]:
    folded = _fold(word)
    return folded, _stem(folded)


class _Matcher:
    def __init__(self, terms: Sequence[str]) -> None:
        if isinstance(terms, str):
            terms = [terms]  # a bare string is a Sequence[str] too, but surely meant as one term
        prepared = (_prepare(term) for term in terms)
        self.terms = tuple(dict.fromkeys(term for term in prepared if term is not None))
        probes = sorted({term.probe for term in self.terms if term.probe}, key=len, reverse=True)
        self._terms_per_probe = {p: sum(1 for t in self.terms if t.probe == p) for p in probes}
        # One C-level scan per line finds which probes it holds: an upper bound on its score that
        # costs far less than splitting the line into words in Python.
        alternation = "|".join(re.escape(p) for p in probes)
        # Probes are lower case; matched against lowered text, which scans several times faster
        # than re.IGNORECASE does.
        self._probe_re = re.compile(alternation) if probes else None

    def upper_bounds(self, lines: list[str], start: int, end: int) -> dict[int, int]:
        """Line index -> at least the number of terms the line can match; lines that cannot match
        any term are left out. One regex scan over the text instead of one per line."""
        if self._probe_re is None or start >= end:
            return {}
        bounds: dict[int, int] = {}
        text = "\n".join(lines[start:end]).lower()
        if not text.isascii():
            for i in range(start, end):
                if not lines[i].isascii():
                    bounds[i] = len(self.terms)  # folding and CJK make a cheap bound unreliable
        found: dict[int, set[str]] = {}
        # Line numbers by counting newlines between matches (in C), not by an offset per line:
        # most lines of a document hold no probe.
        i, scanned = start, 0
        for match in self._probe_re.finditer(text):
            i += text.count("\n", scanned, match.start())
            scanned = match.start()
            if i not in bounds:
                found.setdefault(i, set()).add(match.group())
        for i, probes in found.items():
            # finditer reports non-overlapping matches, so a probe inside a longer one is missed:
            # count any probe contained in a found one too.
            bounds[i] = sum(n for p, n in self._terms_per_probe.items() if any(p in f for f in probes))
        return bounds

    def find(self, line: str) -> tuple[int, int | None]:
        """How many terms ``line`` matches and where the earliest match starts (an index in ``line``)."""
        lowered = line.lower()
        # Folding is for latin terms only: NFKD would also strip the dakuten off kana.
        folded = lowered if line.isascii() else _fold(line)
        count = 0
        earliest: int | None = None
        words: list[tuple[int, str, str]] | None = None  # (position, folded, stem)
        for term in self.terms:
            if term.probe not in (lowered if term.pieces else folded):
                continue
            position: int | None = None
            if term.pieces:
                if all(piece in lowered for piece in term.pieces):
                    position = lowered.find(term.pieces[0])
            else:
                if words is None:
                    words = [(m.start(), *_analyse(m.group())) for m in _WORD.finditer(line)]
                position = self._find_words(term, words)
            if position is None:
                continue
            count += 1
            earliest = position if earliest is None else min(earliest, position)
        return count, earliest

    @staticmethod
    def _find_words(term: _Term, words: list[tuple[int, str, str]]) -> int | None:
        last = len(term.stems) - 1
        for i in range(len(words) - last):
            for k, stem in enumerate(term.stems):
                _, folded, stemmed = words[i + k]
                if not (folded.startswith(stem) if term.prefix and k == last else stemmed == stem):
                    break
            else:
                return words[i][0]
        return None

    def score(self, line: str) -> int:
        return self.find(line)[0]


def term_matcher(terms: Sequence[str]) -> Callable[[str], int]:
    """A function scoring a line by how many of ``terms`` it contains (each distinct term counts once).

    Terms are words, prefixes ending in ``*``, phrases (their words must be consecutive) or CJK text
    (matched as substrings, piece by piece). Matching is case- and diacritic-insensitive and latin
    words are compared by a light stem.
    """
    return _Matcher(terms).score


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after YAML front matter (0 when there is none)."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != _FRONT_MATTER_OPEN:
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FRONT_MATTER_CLOSE:
            return i + 1
    return 0  # never closed: a horizontal rule, not front matter


def _shorten(line: str, position: int, width: int) -> str:
    if len(line) <= width:
        return line
    if width < 3:
        return line[:width]
    # Keep some context before the match but more after it, where the sentence usually continues.
    start = max(0, position - width // 3)
    if start == 0:
        return line[: width - 1] + _ELLIPSIS
    if start + width - 1 >= len(line):
        return _ELLIPSIS + line[len(line) - (width - 1) :]
    return _ELLIPSIS + line[start : start + width - 2] + _ELLIPSIS


def best_snippet(
    body: str,
    terms: Sequence[str],
    *,
    before: int = 1,
    after: int = 2,
    max_line_chars: int = 300,
) -> Snippet:
    """The lines around the line matching the most ``terms`` (the first such line on ties).

    Front matter counts only when nothing after it matches; with no match at all the snippet is the
    first non-blank lines after it. ``start_line`` is the 1-based number of the first returned line,
    as ``split_lines`` counts. The snippet is a preview: lines longer than ``max_line_chars`` are cut
    around their first match and marked with ``…``; ``get`` returns the exact text.
    """
    lines = split_lines(body)
    matcher = _Matcher(terms)
    body_start = _front_matter_end(lines)
    best, score = _best_line(lines, matcher, body_start, len(lines))
    floor = body_start  # a window around a body line does not reach back into the front matter
    if score == 0 and body_start:
        best, score = _best_line(lines, matcher, 0, body_start)
        floor = 0
    if score:
        first, last = best - before, best + after + 1
    else:
        # Nothing matches: show the start of the text, not front matter or blank lines.
        first = _first_non_blank(lines, body_start)
        if first is None:
            floor = 0
            first = _first_non_blank(lines, 0) or 0
        last = first + before + after + 1
    first, last = max(first, floor), min(last, len(lines))
    # Blank lines at the edges of the window carry nothing; the matched line is never blank.
    while first < last and not lines[first].strip():
        first += 1
    while last > first and not lines[last - 1].strip():
        last -= 1
    if first == last:  # an all-blank document
        return Snippet(start_line=1, lines=())
    shown = []
    for line in lines[first:last]:
        if len(line) > max_line_chars:
            line = _shorten(line, matcher.find(line)[1] or 0, max_line_chars)
        shown.append(line)
    return Snippet(start_line=first + 1, lines=tuple(shown))


def _first_non_blank(lines: list[str], start: int) -> int | None:
    return next((i for i in range(start, len(lines)) if lines[i].strip()), None)


def _best_line(lines: list[str], matcher: _Matcher, start: int, end: int) -> tuple[int, int]:
    """The first line with the highest score. Lines are verified in order of their cheap upper
    bound, so a long document is settled after checking a handful of lines."""
    bounded = sorted((-bound, i) for i, bound in matcher.upper_bounds(lines, start, end).items() if bound)
    best, best_score = start, 0
    for negative_bound, i in bounded:
        bound = -negative_bound
        if bound < best_score or (bound == best_score and i > best):
            break  # no remaining line can beat the best, and ties go to the first line
        score = matcher.score(lines[i])
        if score > best_score or (score == best_score and score and i < best):
            best, best_score = i, score
    return best, best_score


def chunk_snippet(body: str, start_line: int, end_line: int, terms: Sequence[str]) -> Snippet:
    """The best lines inside a chunk (lines ``start_line``..``end_line``), numbered as in the
    source file."""
    lines = split_lines(body)[start_line - 1 : end_line]
    inner = best_snippet("\n".join(lines), terms)
    return Snippet(start_line=start_line + inner.start_line - 1, lines=inner.lines)
