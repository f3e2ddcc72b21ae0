"""Choose the lines of a document to show under a search hit.

FTS5 already decided that the document matches; this module only has to find the line that best
shows why, so matching here is approximate by design: a light English stemmer instead of porter,
substring matching for CJK, phrases matched word by word.

The best line matches the most terms, a term that the line defines (see defining.py) counting
twice; among lines that match as many, the one that defines the rarer terms (fewer lines of the
document hold them: a man page's own name is on half its lines, the option asked for on three)
wins, then the first. So ``ssh-keygen`` shows the NAME line rather than the page header ``SSH-KEYGEN(1)``,
which holds the same words, and ``tar -x`` the ``-x, --extract`` entry rather than the synopsis
``tar -x [-f ARCHIVE]``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import log

from tansaku.search.defining import defined_names, may_define
from tansaku.text.cjk import cjk_run_pattern as _cjk_run_pattern
from tansaku.text.cjk import has_cjk, segment_query_words
from tansaku.types import Snippet

# Combining marks belong to the word: decomposed "naïve" is one word, not "nai" and "ve".
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
_ELLIPSIS = "…"
# YAML front matter (--- ... --- or ...) and TOML front matter (+++ ... +++): opener -> closers.
_FRONT_MATTER = {"---": ("---", "..."), "+++": ("+++",)}
# Longest first, so "es" wins over "s"; "ies"/"ied" are rewritten to "y" (queries → query).
_SUFFIXES = ("ing", "ies", "ied", "ed", "es", "ly", "s")
_ES_AFTER = ("s", "x", "z", "ch", "sh")  # "es" is a suffix only after these (boxes, but not files)
_KEEP_DOUBLE = "lsz"  # porter's exception: falling → fall, not fal
# A term that a line defines counts this many times more there than a mention does.
_DEFINING_BONUS = 1
# Weights are whole numbers (a thousandth of the natural log) so that sums compare exactly.
_WEIGHT_SCALE = 1000
# Terms this short are counted as whole words when their rarity is measured.
_SHORT_TERM = 3


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
    # A command-line option (``-a``, ``--all``): matched as written with one or two dashes, a
    # single letter in its case (``-A`` is another option), never as the word ``a``.
    option: re.Pattern[str] | None = None


def _prepare(term: str) -> _Term | None:
    term = term.strip()
    if term.startswith("-") and _WORD.fullmatch(term.lstrip("-")):
        name = term.lstrip("-")
        flags = 0 if len(name) == 1 else re.IGNORECASE
        pattern = re.compile(rf"(?<![\w-])--?{re.escape(name)}(?![\w-])", flags)
        return _Term((_stem(_fold(name)),), (), False, "-" + name.lower(), pattern)
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
        self._probes = probes
        # One C-level scan per line finds which probes it holds: an upper bound on its score that
        # costs far less than splitting the line into words in Python.
        alternation = "|".join(re.escape(p) for p in probes)
        # Probes are lower case; matched against lowered text, which scans several times faster
        # than re.IGNORECASE does.
        self._probe_re = re.compile(alternation) if probes else None

    def weights(self, lines: list[str]) -> dict[_Term, int]:
        """Each term's weight in this document: higher the fewer lines hold it (an IDF over lines).

        Counted by one scan per term for the words that start like the term (whole words for a
        term of three letters or fewer: "x" must not count every "xz"), so a term's weight never
        depends on which lines were verified.
        """
        text = "\n".join(lines).lower()
        size = max(len(lines), 1)
        weights: dict[_Term, int] = {}
        for term in self.terms:
            if term.option is not None:
                count = len(term.option.findall("\n".join(lines)))
            elif term.pieces:
                count = text.count(term.pieces[0])
            else:
                # The literal first, so that the regex engine scans for it in C; then whether a
                # word character comes before it (and, for a short term, after it).
                short = len(term.stems[0]) <= _SHORT_TERM and not (term.prefix and len(term.stems) == 1)
                word = term.stems[0] if short else term.probe
                before = rf"(?<![^\W_].{{{len(word)}}})"
                count = len(re.findall(re.escape(word) + before + (r"(?![^\W_])" if short else ""), text))
            weights[term] = round(_WEIGHT_SCALE * log(1 + size / max(count, 1)))
        return weights

    def upper_bounds(self, lines: list[str], start: int, end: int) -> dict[int, int]:
        """Line index -> at least the number of terms the line can match; lines that cannot match
        any term are left out. One regex scan over the text instead of one per line."""
        if self._probe_re is None or start >= end:
            return {}
        per_probe = {p: sum(1 for t in self.terms if t.probe == p) for p in self._probes}
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
            bounds[i] = sum(n for p, n in per_probe.items() if any(p in f for f in probes))
        return bounds

    def find(self, line: str) -> tuple[int, int | None]:
        """How many terms ``line`` matches and where the earliest match starts (an index in ``line``)."""
        found = self._matches(line)
        return len(found), min(found.values()) if found else None

    def counted(self, line: str) -> tuple[int, list[_Term]]:
        """How many terms ``line`` matches, a term it defines counted twice, and those terms
        with the defined ones repeated (what the line's rarity is summed over)."""
        found = list(self._matches(line))
        defined = _defined_terms(line, found) if found and may_define(line) else []
        return len(found) + _DEFINING_BONUS * len(defined), found + defined * _DEFINING_BONUS

    def _matches(self, line: str) -> dict[_Term, int]:
        """The terms ``line`` matches, each with where its first match starts."""
        lowered = line.lower()
        # Folding is for latin terms only: NFKD would also strip the dakuten off kana.
        folded = lowered if line.isascii() else _fold(line)
        found: dict[_Term, int] = {}
        words: list[tuple[int, str, str]] | None = None  # (position, folded, stem)
        for term in self.terms:
            if term.probe not in (lowered if term.pieces else folded):
                continue
            position: int | None = None
            if term.option is not None:
                found_option = term.option.search(line)
                position = found_option.start() if found_option else None
            elif term.pieces:
                if all(piece in lowered for piece in term.pieces):
                    position = lowered.find(term.pieces[0])
            else:
                if words is None:
                    words = [(m.start(), *_analyse(m.group())) for m in _WORD.finditer(line)]
                position = self._find_words(term, words)
            if position is not None:
                found[term] = position
        return found

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

    def spans(self, line: str) -> list[tuple[int, int]]:
        """Where ``line`` holds a term, as [start, end) offsets, in order and never overlapping:
        whole words only (a word whose stem is the term's, or that starts with a prefix term); a
        phrase from its first word to its last; an option as written; a CJK term where the
        segmenter cuts it out of the CJK text around it, as the index does (``文件`` in ``文件夹``,
        which search mode cuts into 文件 and 文件夹; never a single character of a longer word)."""
        if line.isascii() and (self._probe_re is None or self._probe_re.search(line.lower()) is None):
            return []  # every match holds a probe: most lines of a snippet hold none
        found: list[tuple[int, int]] = []
        latin = [term for term in self.terms if not term.pieces and term.option is None]
        runs = [] if line.isascii() else list(_cjk_run_pattern().finditer(line))
        if latin:
            # CJK runs blanked out (same length), so offsets hold and a Latin word never runs into one.
            text = _blank_runs(line, runs) if runs else line
            words = [(m.start(), m.end(), *_analyse(m.group())) for m in _WORD.finditer(text)]
            for term in latin:
                found += _word_spans(term, words)
        for term in self.terms:
            if term.option is not None:
                found += [m.span() for m in term.option.finditer(line)]
        cjk = {piece for term in self.terms for piece in term.pieces}
        for run in runs if cjk else ():
            text = run.group().lower()
            held = {piece for piece in cjk if piece in text}
            for piece in held & set(segment_query_words(text)) if held else ():
                at = text.find(piece)
                while at >= 0:
                    found.append((run.start() + at, run.start() + at + len(piece)))
                    at = text.find(piece, at + len(piece))
        return _merged(found)


def _defined_terms(line: str, found: list[_Term]) -> list[_Term]:
    """The terms among ``found`` that make up a name ``line`` defines: ``ssh`` and ``keygen`` for
    ``ssh-keygen — ...``, ``x`` for ``-x, --extract``; not ``ssh`` for ``ssh-copy-id — ...``, which
    defines another name."""
    latin = [term for term in found if not term.pieces]
    defined: list[_Term] = []
    for name in defined_names(line):
        words = [_analyse(word) for word in _WORD.findall(name)]
        parts = [term for term in latin if _within(term, words)]
        if words and all(any(_names(term, word) for term in parts) for word in words):
            defined += parts
    return list(dict.fromkeys(defined))


def _names(term: _Term, word: tuple[str, str]) -> bool:
    """Whether ``word`` (folded, stem) is one of the words of ``term``."""
    folded, stem = word
    return stem in term.stems or (term.prefix and folded.startswith(term.stems[-1]))


def _within(term: _Term, words: list[tuple[str, str]]) -> bool:
    """Whether every word of ``term`` is among ``words``."""
    *whole, last = term.stems
    stems = {stem for _, stem in words}
    if term.prefix:
        return all(s in stems for s in whole) and any(f.startswith(last) for f, _ in words)
    return all(stem in stems for stem in term.stems)


def _word_spans(term: _Term, words: list[tuple[int, int, str, str]]) -> list[tuple[int, int]]:
    last = len(term.stems) - 1
    spans = []
    for i in range(len(words) - last):
        for k, stem in enumerate(term.stems):
            _, _, folded, stemmed = words[i + k]
            if not (folded.startswith(stem) if term.prefix and k == last else stemmed == stem):
                break
        else:
            spans.append((words[i][0], words[i + last][1]))
    return spans


def _blank_runs(line: str, runs: list[re.Match[str]]) -> str:
    parts, pos = [], 0
    for run in runs:
        parts += [line[pos : run.start()], " " * (run.end() - run.start())]
        pos = run.end()
    parts.append(line[pos:])
    return "".join(parts)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def term_spans(lines: Sequence[Sequence[str]], terms: Sequence[str]) -> list[list[list[tuple[int, int]]]]:
    """For each snippet's lines, where each line holds one of ``terms`` (the terms the snippets
    were chosen by), as [start, end) offsets in code points: what a front end marks. The same
    matching that chose the snippets, so every marked word is one a snippet was shown for, and
    only whole words."""
    matcher = _Matcher(terms)
    if not matcher.terms:
        return [[[] for _ in snippet] for snippet in lines]
    return [[matcher.spans(line) for line in snippet] for snippet in lines]


def term_matcher(terms: Sequence[str]) -> Callable[[str], int]:
    """A function scoring a line by how many of ``terms`` it contains (each distinct term counts once).

    Terms are words, prefixes ending in ``*``, phrases (their words must be consecutive) or CJK text
    (matched as substrings, piece by piece). Matching is case- and diacritic-insensitive and latin
    words are compared by a light stem.
    """
    return _Matcher(terms).score


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after YAML or TOML front matter (0 when there is none)."""
    closers = _FRONT_MATTER.get(lines[0].lstrip("\ufeff").rstrip()) if lines else None
    if closers is None:
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in closers:
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
    """The best line (see the module's docstring) and its count. Lines are verified in order of
    their cheap upper bound, so a long document is settled after checking a handful of lines."""
    bounded = sorted(
        (-bound * (1 + _DEFINING_BONUS), i, True) if may_define(lines[i]) else (-bound, i, False)
        for i, bound in matcher.upper_bounds(lines, start, end).items()
        if bound
    )
    # With one term, lines that count alike match alike: the first of them wins. With more, when
    # a line defines a term, the one with the rarer terms wins a tie (``ps aux``: the line with
    # aux over the NAME line of ps), so every line that can reach the best count is verified.
    rarity_matters = len(matcher.terms) > 1
    weights: dict[_Term, int] | None = None
    best, best_count, best_terms, best_defines = start, 0, [], False
    for negative_bound, i, can_define in bounded:
        bound = -negative_bound
        if bound < best_count or (bound == best_count and i > best and not rarity_matters):
            break  # no remaining line can beat the best, and ties go to the first line
        if bound == best_count and i > best and not (can_define or best_defines):
            continue  # at best a tie in which neither defines a term: the first line wins it
        count, terms = matcher.counted(lines[i])
        if count < best_count or not count:
            continue
        defines = len(terms) > len(set(terms))
        if count == best_count:
            if not (rarity_matters and (defines or best_defines)):
                best = min(best, i)
                continue
            weights = weights or matcher.weights(lines)
            rarer = sum(weights[t] for t in terms) - sum(weights[t] for t in best_terms)
            if rarer < 0 or (rarer == 0 and i > best):
                continue
        best, best_count, best_terms, best_defines = i, count, terms, defines
    return best, best_count


def chunk_snippet(body: str, start_line: int, end_line: int, terms: Sequence[str]) -> Snippet:
    """The best lines inside a chunk (lines ``start_line``..``end_line``), numbered as in the
    source file."""
    lines = split_lines(body)[start_line - 1 : end_line]
    inner = best_snippet("\n".join(lines), terms)
    return Snippet(start_line=start_line + inner.start_line - 1, lines=inner.lines)
