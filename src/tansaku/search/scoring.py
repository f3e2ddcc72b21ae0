"""How keyword search scores its candidates: BM25 per term, names weighed by what documents define.

``keyword.py`` finds candidates with FTS5 (which also orders them by its own bm25); this module
turns them into scores. BM25 is a sum over query phrases, so asking FTS5 for one phrase's bm25 at
a time gives exact per-term parts, and each part can then get its own IDF and column weights.
That costs one pass over the phrase's matches (about 1.5 µs a match), so it is done only where it
changes something: for names, and for terms FTS5 scores as worthless. A sentence of ordinary
words keeps FTS5's own sum from finding the candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store.backend import POSTGRES, backend_of
from ..store.backend import documents as store
from .file_kinds import path_weight
from .query import ParsedQuery, Term, fts_adjacent, fts_term, parse_query
from .score_scale import reference, relative

# How much an identifier's parts in order (the exact name) add, relative to the parts alone.
ADJACENCY_WEIGHT = 1.0
# The IDF of a term in over half the documents. FTS5 clamps it to 1e-6, which makes a common word
# worthless; Lucene's smoothed IDF keeps it at ln 2, which lets common words of a long question
# outvote its one rare word (paraphrases lost 0.05 MRR). A small floor sits between.
IDF_FLOOR = 0.05
# What a document that defines a name (a heading or definition, an option list entry) gains, in
# units of the name's IDF there.
DEFINES_BONUS = 2.0
# When this many documents define a name alike, the definition is a copy in most of them (npm
# repeats each config key's section, `#### ignore-scripts`, in every command page it affects), and
# the page that defines the most names among them is where the copies come from (using-npm/
# config.md): it gains the bonus once more. Otherwise BM25's length normalisation hands the name to
# the shortest copy.
SHARED_DEFINITION = 3
# A term in more than this share of the documents and more than COMMON_MATCHES of them is common:
# its parts (at the IDF floor, tiny) are not read, and it is assumed present in every candidate
# (reading it costs 0.1-0.3 s per word at 100,000 documents). Below COMMON_MATCHES the pass is
# cheap and every score is exact. In a sentence (where FTS5's own sum is kept), a word in more
# than COMMON_MATCHES documents is not read at all: its presence is assumed.
COMMON_FRACTION = 0.5
COMMON_MATCHES = 20_000
# Column weights (path, title, body, headings, options): a name counts most where it is defined.
NAME_WEIGHTS = store.BM25_WEIGHTS
PROSE_WEIGHTS = store.PROSE_WEIGHTS
# The IDF FTS5 gives a term in over half the documents.
_FTS_IDF_CLAMP = 1e-6


@dataclass
class Scored:
    doc_id: int
    score: float  # 0..1
    clauses: float  # how many terms matched (an identifier with some of its parts counts a share)
    defines: bool = False  # defines a name of the query (a heading, a definition, an option entry)


def fts_idf(n_docs: int, df: int) -> float:
    """The IDF FTS5 uses inside bm25(): clamped to 1e-6 for terms in over half the documents."""
    return max(math.log((n_docs - df + 0.5) / (df + 0.5)), _FTS_IDF_CLAMP)


def term_idf(n_docs: int, df: int) -> float:
    """BM25's IDF with a floor, so a word in most documents of a small collection still counts
    a little (its documents do not all score 0.00) without outvoting the rare words."""
    return max(math.log((n_docs - df + 0.5) / (df + 0.5)), IDF_FLOOR)


class _Parts:
    """Per-expression facts about the candidates (document frequency, BM25 parts, presence),
    each read from FTS5 once."""

    def __init__(self, conn: Any, ids: Sequence[int]) -> None:
        self.conn = conn
        self.ids = ids
        self.n_docs = max(store.document_total(conn), 1)
        self._df: dict[str, int] = {}
        self._bm25: dict[tuple[str, tuple[float, ...]], dict[int, float]] = {}
        self._present: dict[str, set[int]] = {}

    def df(self, expression: str) -> int:
        if expression not in self._df:
            self._df[expression] = store.phrase_frequency(self.conn, expression)
        return self._df[expression]

    def common(self, expression: str) -> bool:
        df = self.df(expression)
        return df > COMMON_FRACTION * self.n_docs and df > COMMON_MATCHES

    def bm25(self, expression: str, weights: Sequence[float]) -> dict[int, float]:
        """{candidate: the expression's BM25 part with ``term_idf``}; empty for a common one."""
        key = (expression, tuple(weights))
        if key not in self._bm25:
            df = self.df(expression)
            found: dict[int, float] = {}
            if df and not self.common(expression):
                factor = term_idf(self.n_docs, df) / fts_idf(self.n_docs, df)
                raw = store.phrase_bm25(self.conn, expression, self.ids, weights)
                found = {doc_id: abs(value) * factor for doc_id, value in raw.items()}
            self._bm25[key] = found
        return self._bm25[key]

    def seed(self, expression: str, weights: Sequence[float], raw: Mapping[int, float]) -> None:
        """Take the expression's parts from a search that already computed its bm25."""
        df = self.df(expression)
        if df and not self.common(expression):
            factor = term_idf(self.n_docs, df) / fts_idf(self.n_docs, df)
            self._bm25[(expression, tuple(weights))] = {d: abs(v) * factor for d, v in raw.items()}

    def prepare(self, asked: Sequence[tuple[str, Sequence[float], str]], complete: set[int]) -> None:
        """Read at once what rescore's loop will ask (``asked``: its expressions with their weights
        and role, see :func:`_asked`), where each question is a round trip (PostgreSQL: two
        statements instead of up to three a term); the loop then finds the answers here. SQLite
        answers each in-process, and is asked as the loop goes."""
        if backend_of(self.conn) != POSTGRES or not asked:
            return
        fresh = [expression for expression, _, _ in asked if expression not in self._df]
        if fresh:
            self._df.update(store.phrase_frequencies(self.conn, fresh))
        scored: dict[tuple[str, tuple[float, ...]], None] = {}
        present: dict[str, None] = {}
        for expression, weights, role in asked:
            df = self._df[expression]
            if role != "bm25" and df > COMMON_MATCHES:
                continue  # not read (see _floor_correction and rescore)
            wants_bm25 = role != "floor" or (df and fts_idf(self.n_docs, df) < term_idf(self.n_docs, df))
            if wants_bm25:
                if df and not self.common(expression) and (expression, tuple(weights)) not in self._bm25:
                    scored[(expression, tuple(weights))] = None
            elif len(complete) != len(self.ids) and expression not in self._present:
                present[expression] = None
        if not scored and not present:
            return
        raws, holding = store.phrase_parts(self.conn, list(scored), list(present), self.ids)
        for (expression, weights), raw in zip(scored, raws, strict=True):
            df = self._df[expression]
            factor = term_idf(self.n_docs, df) / fts_idf(self.n_docs, df)
            self._bm25[(expression, weights)] = {doc_id: abs(value) * factor for doc_id, value in raw.items()}
        self._present.update(zip(present, holding, strict=True))

    def present(self, expression: str) -> set[int] | None:
        """The candidates that contain the expression; None for a common one (assumed in all)."""
        if self.common(expression):
            return None
        if expression not in self._present:
            self._present[expression] = store.phrase_documents(self.conn, expression, self.ids)
        return self._present[expression]


def rescore(
    conn: Any,
    parsed: ParsedQuery,
    clauses: ParsedQuery,
    names: set[Term],
    candidates: Mapping[int, float],
    complete: set[int],
    *,
    short: bool,
    command: Term | None = None,
) -> tuple[list[Scored], list[str]]:
    """Score the candidates; also return the required terms that no document contains.

    ``candidates`` maps each document to FTS5's bm25 for the query that found it (the required
    terms, OR-ed or AND-ed, with the prose column weights when ``names`` is empty); ``complete``
    are the candidates known to contain every required term.

    - A query without names keeps FTS5's sum and only corrects it where FTS5 is off: a term in
      over half the documents gets ``IDF_FLOOR`` instead of 1e-6, and optional stopwords add
      their parts.
    - A query with names is summed term by term: a name weighs the headings and options columns,
      an identifier adds its parts as one phrase (the exact name), and in a short query (or for
      ``command``, the word before an option: ``mount -o loop``, in any query) a
      document that defines the name gains ``DEFINES_BONUS`` times its IDF there.
    """
    if not candidates:
        return [], []
    ids = list(candidates)
    parts = _Parts(conn, ids)
    if len(parsed.terms) == 1 and len(parsed.terms[0].atoms) == 1 and names:
        # One word: FTS5's bm25 in finding the candidates was that word's part already.
        parts.seed(fts_term(parsed.terms[0]), NAME_WEIGHTS, candidates)
    required = set(clauses.positive)
    prose = not names
    parts.prepare(_asked(parsed, required, names), complete)
    sums = {doc_id: abs(raw) for doc_id, raw in candidates.items()} if prose else dict.fromkeys(ids, 0.0)
    shares: dict[Term, dict[int, float]] = {}
    definers: set[int] = set()
    summed_any = False
    for term in parsed.positive:
        weights = NAME_WEIGHTS if term in names else PROSE_WEIGHTS
        share: dict[int, float] = {}
        for atom in term.atoms:
            expression = fts_term(atom)
            if prose and term in required:
                present = _floor_correction(parts, expression, weights, sums, complete)
            elif term not in required and parts.df(expression) > COMMON_MATCHES:
                continue  # a frequent optional stopword: next to nothing, at a pass's cost
            else:
                found = parts.bm25(expression, weights)
                summed_any = summed_any or bool(found)
                for doc_id, value in found.items():
                    sums[doc_id] += value
                present = None if parts.common(expression) else set(found)
            for doc_id in ids if present is None else present:
                share[doc_id] = share.get(doc_id, 0.0) + 1.0 / len(term.atoms)
        phrase: dict[int, float] = {}
        if term.kind == "ident":
            phrase = parts.bm25(fts_adjacent(term), weights)
            for doc_id, value in phrase.items():
                sums[doc_id] += ADJACENCY_WEIGHT * value
        # A hyphenated option (--preserve-root) is listed by every command that takes it, rm(1)
        # and chown(1) alike: where it is defined says little. A hyphenated name is defined once.
        if (short or term == command) and term in names and not (term.hyphenated and term.option):
            definers |= _add_definition_bonus(conn, parts, term, weights, sums, phrase)
        if term in required:
            shares[term] = share
    if not prose and not summed_any:
        # Only common words, all at the IDF floor: FTS5's bm25, rescaled from its clamp to the
        # floor, is then the exact sum.
        for doc_id, raw in candidates.items():
            sums[doc_id] += abs(raw) * IDF_FLOOR / _FTS_IDF_CLAMP
    for doc_id, path in store.paths_by_ids(conn, ids).items():
        sums[doc_id] *= path_weight(path)
    absent = [t.text for t in clauses.positive if parts.df(fts_term(t)) == 0]
    query_reference = reference(t.weight * t.idf for t in reference_terms(parts.df, parts.n_docs, clauses))
    scored = [
        Scored(
            doc_id,
            relative(sums[doc_id], query_reference),
            sum(share.get(doc_id, 0.0) for share in shares.values()),
            doc_id in definers,
        )
        for doc_id in ids
    ]
    return scored, absent


def _asked(
    parsed: ParsedQuery, required: set[Term], names: set[Term]
) -> list[tuple[str, Sequence[float], str]]:
    """What rescore's loop asks of ``_Parts`` for each term, in its order: (expression, weights,
    role): "floor" for a required term of a query without names (_floor_correction), "optional"
    for a term not required (read unless frequent), "bm25" for the others and an identifier's
    parts in order."""
    asked: list[tuple[str, Sequence[float], str]] = []
    for term in parsed.positive:
        weights = NAME_WEIGHTS if term in names else PROSE_WEIGHTS
        for atom in term.atoms:
            if not names and term in required:
                role = "floor"
            elif term not in required:
                role = "optional"
            else:
                role = "bm25"
            asked.append((fts_term(atom), weights, role))
        if term.kind == "ident":
            asked.append((fts_adjacent(term), weights, "bm25"))
    return asked


@dataclass(frozen=True)
class ReferenceTerm:
    """One part of a query's score reference (see score_scale)."""

    expression: str  # the FTS5 expression of an atom, or of an identifier's parts in order
    idf: float  # term_idf over every document of the index
    weight: float  # 1, or ADJACENCY_WEIGHT for the exact name


def reference_terms(df: Callable[[str], int], n_docs: int, clauses: ParsedQuery) -> list[ReferenceTerm]:
    """The parts of a query's reference, each weighed as the document sums weigh it: every atom
    of the required terms, and an identifier's parts in order (the exact name). The IDFs are over
    every document of the index, files and sessions alike, so a word weighs the same wherever it
    is found (transcript turns are scored with these IDFs too: search/transcripts.py)."""
    found: dict[str, ReferenceTerm] = {}
    for term in clauses.positive:
        for atom in term.atoms:
            expression = fts_term(atom)
            found.setdefault(expression, ReferenceTerm(expression, term_idf(n_docs, df(expression)), 1.0))
        if term.kind == "ident":
            expression = fts_adjacent(term)
            idf = term_idf(n_docs, df(expression))
            found.setdefault(expression, ReferenceTerm(expression, idf, ADJACENCY_WEIGHT))
    return list(found.values())


def _floor_correction(
    parts: _Parts, expression: str, weights: Sequence[float], sums: dict[int, float], complete: set[int]
) -> set[int] | None:
    """For a required term already in FTS5's sum: lift its IDF from FTS5's clamp to the floor
    where FTS5 clamped it (and it is affordable); return the candidates that contain it."""
    df = parts.df(expression)
    if df > COMMON_MATCHES:
        # Too many matches to read for a correction of at most IDF_FLOOR, or for the presence of
        # a word found in a fifth of the index or more: assumed present.
        return None
    fts, ours = fts_idf(parts.n_docs, df), term_idf(parts.n_docs, df)
    if df and fts < ours:
        found = parts.bm25(expression, weights)  # with ``ours``; FTS5's sum has it with ``fts``
        for doc_id, value in found.items():
            sums[doc_id] += value * (1.0 - fts / ours)
        return set(found)
    if len(complete) == len(parts.ids):
        return None  # every candidate has every required term
    return parts.present(expression)


def _add_definition_bonus(
    conn: Any,
    parts: _Parts,
    term: Term,
    weights: Sequence[float],
    sums: dict[int, float],
    phrase: dict[int, float],
) -> set[int]:
    """Defining a name outweighs mentioning it, however long the defining page is (BM25's length
    normalisation alone ranks os.rst.txt, 180 KB, below short pages quoting os.environ), by twice
    the rarer of its IDF in the column and the IDF of the count of documents that define it.
    ``phrase``: each document's part for the identifier's pieces in order. Returns the documents
    that gained the bonus."""
    name = fts_adjacent(term) if term.kind == "ident" else fts_term(term)
    column = "options" if term.option else "headings"
    # The title defines what a page is about as its headings do (``package-lock.json``).
    expression = f"{{{'options' if term.option else 'title headings'}}} : {name}"
    found = parts.bm25(expression, weights)
    bonus = DEFINES_BONUS * term_idf(parts.n_docs, parts.df(expression))
    defined = store.defined_names(conn, list(found), column)
    bonuses = _by_level(_defining(conn, term, column, found, defined=defined), bonus)
    if term.kind == "ident" and not term.option and not term.prefix:
        for doc_id, (in_module, tail) in _defined_in_module(conn, parts, term, weights).items():
            bonuses.setdefault(doc_id, in_module)
            # Inside its module the name is written without the module (``IntRange`` in
            # src/click/types.py), so its plain mentions there are mentions of the qualified name:
            # otherwise the tests, which write ``click.IntRange`` thirty times, outscore it.
            sums[doc_id] += ADJACENCY_WEIGHT * max(0.0, tail - phrase.get(doc_id, 0.0))
    if bonuses:
        # The column's frequency counts every heading with the word (test_option_default,
        # format_option, Option.__init__ for ``option``): a name defined by 3 files but in 60
        # headings would weigh as a common word. Its rarity is that of its definitions.
        top = max(bonuses.values())
        rare = DEFINES_BONUS * term_idf(parts.n_docs, sum(value == top for value in bonuses.values()))
        bonuses = {doc_id: value * max(1.0, rare / top) for doc_id, value in bonuses.items()}
        if column == "headings":
            # Options are not copies: -b in python(1), compileall(1) and unittest(1) is three options.
            bonuses = _to_the_source(bonuses, defined)
    for doc_id, value in bonuses.items():
        sums[doc_id] += value
    return set(bonuses)


def _to_the_source(bonuses: dict[int, float], defined: Mapping[int, Sequence[str]]) -> dict[int, float]:
    """``bonuses`` with the best one once more for the document that defines the most names among
    those that share the best bonus, when at least SHARED_DEFINITION do (see there)."""
    top = max(bonuses.values())
    shared = [doc_id for doc_id, value in bonuses.items() if value == top]
    if len(shared) < SHARED_DEFINITION:
        return bonuses
    most = max(len(defined.get(doc_id, ())) for doc_id in shared)
    return {
        doc_id: value + top if value == top and len(defined.get(doc_id, ())) == most else value
        for doc_id, value in bonuses.items()
    }


def _defined_in_module(
    conn: Any, parts: _Parts, term: Term, weights: Sequence[float]
) -> dict[int, tuple[float, float]]:
    """{document: (bonus, the last pieces' part)} for the documents that define a dotted name's
    last pieces in a file whose path holds its first ones: code names its module by its path, not
    in the definition (``click.UNPROCESSED`` and ``click.types.UNPROCESSED`` are ``UNPROCESSED`` in
    src/click/types.py)."""
    pieces = (term.cased or term.written).split(".")
    if len(pieces) < 2 or not all(pieces):
        return {}
    sensitive = case_sensitive(term)
    bonuses: dict[int, tuple[float, float]] = {}
    for cut in range(1, len(pieces)):
        module = [piece.lower() for piece in pieces[:cut]]
        rest = parse_query(".".join(pieces[cut:])).terms
        if len(rest) != 1 or rest[0].kind not in ("ident", "word"):
            continue
        name = rest[0]
        written = fts_adjacent(name) if name.kind == "ident" else fts_term(name)
        expression = f"headings : {written}"
        found = parts.bm25(expression, weights)
        if not found:
            continue
        bonus = DEFINES_BONUS * term_idf(parts.n_docs, parts.df(expression))
        levels = _defining(conn, name, "headings", found, sensitive=sensitive)
        definers = store.documents_by_ids(conn, levels)
        in_module = {
            doc_id: levels[doc_id]
            for doc_id, doc in definers.items()
            if _holds_in_order(_path_pieces(doc.path), module)
        }
        if not in_module:
            continue
        mentions = parts.bm25(written, weights)
        for doc_id, share in _by_level(in_module, bonus).items():
            best = bonuses.get(doc_id, (0.0, 0.0))
            bonuses[doc_id] = (max(best[0], share), max(best[1], mentions.get(doc_id, 0.0)))
    return bonuses


def _by_level(levels: dict[int, int], bonus: float) -> dict[int, float]:
    """{document: its bonus}: in full at the best level ``_defining`` found, half below it. Where
    a document defines the name itself (the builtin ``open``), those that define only a qualified
    name ending with it (``webbrowser.open``) count half; so do those that define it only in
    another case than the one typed, where another has that case."""
    best = max(levels.values(), default=0)
    return {doc_id: bonus if level == best else bonus / 2 for doc_id, level in levels.items()}


def _path_pieces(path: str) -> list[str]:
    """src/click/types.py -> [src, click, types]; library/os.path.rst.txt -> [library, os, path, rst]."""
    *folders, file_name = path.lower().split("/")
    stem = file_name.rsplit(".", 1)[0] if "." in file_name else file_name
    return [*folders, *stem.split(".")]


def _holds_in_order(pieces: Sequence[str], wanted: Sequence[str]) -> bool:
    """Whether ``wanted`` is a run of consecutive ``pieces``."""
    size = len(wanted)
    return any(list(pieces[i : i + size]) == list(wanted) for i in range(len(pieces) - size + 1))


_ROLE = re.compile(r":[\w:]+:`|`")


_SUBJECT_TAILS = (" -", " \u2014", " \u2013", ",", "(", ":")
# How a defined name matches the query's: itself (or, for a lone word, the subject of a title), or
# only as the last part of a qualified name (``threading.enumerate`` for ``enumerate``). _defining's
# levels are twice that, plus one where the definition has the case the name was typed in.
EXACT, QUALIFIED = 2, 1


def _defines(line: str, name: str, *, as_subject: bool, case_sensitive: bool = False) -> int:
    entry = _ROLE.sub("", line).strip()
    if not case_sensitive:
        entry = entry.lower()
    if entry == name:
        return EXACT
    # A name also counts as the subject of a title: "rsync - a fast, versatile ..." (a man page's
    # NAME line), ":mod:`textwrap` --- Text wrapping", "ls, dir, vdir - list directory contents",
    # "ld.so, ld-linux.so - dynamic linker/loader"; not "rsync-ssl - a helper", nor a heading that
    # starts with the word ("Open URL in a new tab" does not define ``open``).
    if as_subject and entry.startswith(tuple(name + tail for tail in _SUBJECT_TAILS)):
        return EXACT
    return QUALIFIED if entry.endswith("." + name) else 0


def case_sensitive(term: Term) -> bool:
    """Whether a definition must have the term's case: always for an option (``-B`` is not
    ``-b``), and for a name typed in mixed case (smart case: ``ProgressBar`` asks for the class,
    not the function ``progressbar``). A name typed in one case (``json``, ``JSON``) matches any."""
    if term.option:
        return True
    return any(c.isupper() for c in term.cased) and any(c.islower() for c in term.cased)


def _defining(
    conn: Any,
    term: Term,
    column: str,
    ids: Iterable[int],
    *,
    sensitive: bool | None = None,
    defined: Mapping[int, Sequence[str]] | None = None,
) -> dict[int, int]:
    """{document: level} for the documents among ``ids`` that define ``term`` itself (2 x EXACT or
    QUALIFIED, + 1 in the case typed):
    for an identifier, a defined name that is it or ends with it (``os.path.join``,
    ``pathlib.Path.read_text`` for ``Path.read_text``), not one that only has the same tokens
    (``BaseHandler.os_environ``); in the term's case where :func:`case_sensitive` says so."""
    ids = list(ids)
    # A word as typed where that differs from its text (``__slots__`` is not ``PyType_Spec.slots``).
    name = term.written if term.kind == "ident" else (term.cased.lower() or term.text)
    if not name or term.kind not in ("ident", "word"):
        return dict.fromkeys(ids, 2 * EXACT + 1)
    if sensitive is None:
        sensitive = case_sensitive(term)
    sensitive = sensitive and term.cased.lower() == name
    if sensitive:
        name = term.cased
    if defined is None:
        defined = store.defined_names(conn, ids, column)
    as_subject = term.kind in ("word", "ident") and column == "headings"
    # A name typed in one case matches a definition in any case, but one in the case typed is
    # the likelier meaning (``click.option`` the decorator, not ``class Option``).
    as_typed = term.cased if not sensitive and term.cased.lower() == name else None
    found = {}
    for doc_id in ids:
        level = 0
        for line in defined.get(doc_id, []):
            matched = _defines(line, name, as_subject=as_subject, case_sensitive=sensitive)
            if not matched:
                continue
            same_case = as_typed is None or bool(
                _defines(line, as_typed, as_subject=as_subject, case_sensitive=True)
            )
            level = max(level, 2 * matched + same_case)
        if level:
            found[doc_id] = level
    return found
