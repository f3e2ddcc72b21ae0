"""Keyword search: FTS5 + BM25 over the chosen collections, with an honest partial-match fallback."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import EmptyQuery
from ..store import documents as store
from ..text.cjk import has_cjk
from ..types import Collection, Hit, Notice, SearchResult
from .hits import make_hit
from .query import (
    ParsedQuery,
    Term,
    fts_adjacent,
    fts_expression,
    fts_term,
    parse_query,
    required_terms,
    resolve_options,
)
from .snippets import best_snippet

# FTS5 orders candidates; tansaku re-scores this many per collection (and per candidate query),
# so its own IDF and the identifier phrases can reorder them. FTS5 scores every match to order
# them anyway, so a larger pool costs little.
POOL = 200
# Queries of up to this many terms (stopwords aside) require all of them; longer ones rank
# documents by the terms they contain, never filter on them (pasted errors, questions).
STRICT_CLAUSES = 2
# The share of a long query's terms below which the best results get PARTIAL_MATCH.
MIN_SHOULD_MATCH = 0.5
# The coordination factor's exponent: each document's BM25 sum is multiplied by the IDF-weighted
# share of the query's terms it contains, raised to this. Measured on evals/sets (0, 0.5, 1, 2):
# anything above 0 lost on paraphrases and how-tos (the long pages that contain every common word
# win) and gained nothing elsewhere, so BM25's own sum decides; the strict rule above and the
# IDF floor below keep documents with every rare term on top.
COORD_POWER = 0.0
# How much an identifier's parts in order (the exact name) add, relative to the parts alone.
ADJACENCY_WEIGHT = 1.0
# The IDF of a term in over half the documents. FTS5 clamps it to 1e-6, which makes a common word
# worthless; Lucene's smoothed IDF keeps it at ln 2, which lets common words of a long question
# outvote its one rare word (paraphrases lost 0.05 MRR). A small floor sits between.
IDF_FLOOR = 0.05
# What a document that defines a name (a heading or definition, an option list entry) gains, in
# units of the name's IDF there.
DEFINES_BONUS = 2.0
# Above this many matching documents a term's BM25 parts are computed for the candidates only.
COMMON_MATCHES = 5_000
NAME_WEIGHTS = store.BM25_WEIGHTS
PROSE_WEIGHTS = store.PROSE_WEIGHTS


@dataclass(frozen=True)
class SearchOptions:
    limit: int | None = 5  # None = all
    min_score: float = 0.0
    full: bool = False


def normalize(x: float) -> float:
    """Map a non-negative BM25 sum into 0..1, monotonically: x / (1 + x)."""
    return x / (1.0 + x)


def fts_idf(n_docs: int, df: int) -> float:
    """The IDF FTS5 uses inside bm25(): clamped to 1e-6 for terms in over half the documents."""
    return max(math.log((n_docs - df + 0.5) / (df + 0.5)), 1e-6)


def term_idf(n_docs: int, df: int) -> float:
    """BM25's IDF with a floor, so a word in most documents of a small collection still counts
    a little (its documents do not all score 0.00) without outvoting the rare words."""
    return max(math.log((n_docs - df + 0.5) / (df + 0.5)), IDF_FLOOR)


def name_terms(parsed: ParsedQuery, clauses: ParsedQuery) -> set[Term]:
    """The terms that name something, for which headings and option lists are the best evidence:
    identifiers and options as written (os.path.join, --flag), and a lone word (`rsync`). A
    hyphenated word is a name in a short query (save-exact), prose in a sentence (CPU-heavy)."""
    short = len(clauses.positive) <= STRICT_CLAUSES
    names = {t for t in parsed.positive if t.option or (t.kind == "ident" and (short or not t.hyphenated))}
    if len(clauses.positive) == 1 and not has_cjk(clauses.positive[0].text):
        names.add(clauses.positive[0])
    return names


def search(
    conn: Any,
    query: str,
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
    options: SearchOptions,
    warnings: Sequence[Notice] = (),
) -> SearchResult:
    started = time.perf_counter()
    parsed = resolve_options(parse_query(query), lambda name: store.option_defined(conn, name))
    clauses = required_terms(parsed)
    if fts_expression(clauses, "all") is None:
        raise EmptyQuery(
            f"the query {query!r} has nothing to search for",
            hint="give at least one word that is not negated with '-'",
        )
    notices = list(warnings)
    names = name_terms(parsed, clauses)
    n_clauses = len(clauses.positive)
    strict = n_clauses <= STRICT_CLAUSES
    pool = None if options.limit is None else max(POOL, options.limit * 4)
    weights = NAME_WEIGHTS if names else PROSE_WEIGHTS
    candidates, total = _candidates(conn, fts_expression(clauses, "all"), collections, pool, weights)
    if not strict:
        # Long queries rank, they do not filter: documents with any term are candidates. The
        # documents with every term come first from their own query, so a flood of documents
        # with one frequent word cannot push them out of the pool.
        more, total = _candidates(conn, fts_expression(clauses, "clauses"), collections, pool, weights)
        candidates = list(dict.fromkeys(candidates + more))
    if not candidates:
        # Last resort: any word at all, identifier parts on their own included ("No results."
        # must mean that nothing matches).
        candidates, total = _candidates(conn, fts_expression(clauses, "any"), collections, pool, weights)
    if not candidates and len(parsed.positive) > len(clauses.positive):
        # ... and the optional stopwords too: "zebrafish the" is not "No results." if "the" exists.
        candidates, total = _candidates(conn, fts_expression(parsed, "any"), collections, pool, weights)
    scored, absent = rescore(conn, parsed, clauses, names, candidates)
    best = max((item.clauses for item in scored), default=0.0)
    needed = n_clauses if strict else math.ceil(n_clauses * MIN_SHOULD_MATCH)
    if scored and (best < needed or absent):
        found_nowhere = f" ({', '.join(absent)} found nowhere)" if absent else ""
        notices.append(
            Notice(
                "PARTIAL_MATCH",
                f"no document contains all {n_clauses} terms{found_nowhere}; showing documents "
                "that contain some of them",
            )
        )
    scored.sort(key=lambda item: (-item.score, item.doc_id))
    scored = [item for item in scored if item.score >= options.min_score]
    if options.limit is not None:
        scored = scored[: options.limit]
    hits = _hits(conn, scored, clauses, n_clauses, contexts, options, {c.name: c for c in collections})
    return SearchResult(
        query=query,
        mode="search",
        hits=tuple(hits),
        total=total,
        limit=options.limit,
        warnings=tuple(notices),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=tuple(c.name for c in collections),
    )


def _candidates(
    conn: Any,
    expression: str | None,
    collections: Sequence[Collection],
    pool: int | None,
    weights: Sequence[float],
) -> tuple[list[int], int]:
    """Best-first document ids per collection (each collection gets its own pool) and the total."""
    ids: list[int] = []
    total = 0
    if expression is None:
        return ids, total
    for collection in collections:
        rows = store.keyword_search(conn, expression, collection.name, pool, weights)
        ids.extend(doc_id for doc_id, _ in rows)
        full_pool = pool is not None and len(rows) == pool
        total += store.keyword_count(conn, expression, collection.name) if full_pool else len(rows)
    return ids, total


@dataclass
class Scored:
    doc_id: int
    score: float  # 0..1
    clauses: float  # how many terms matched (an identifier with some of its parts counts a share)


class _Parts:
    """BM25 parts of single FTS5 expressions for the candidates, each computed once."""

    def __init__(self, conn: Any, ids: Sequence[int]) -> None:
        self.conn = conn
        self.ids = ids
        self.n_docs = max(store.document_total(conn), 1)
        self._cache: dict[tuple[str, tuple[float, ...]], tuple[int, dict[int, float]]] = {}
        self._df: dict[str, int] = {}

    def df(self, expression: str) -> int:
        if expression not in self._df:
            self._df[expression] = store.phrase_frequency(self.conn, expression)
        return self._df[expression]

    def get(self, expression: str, weights: Sequence[float]) -> tuple[int, dict[int, float]]:
        """(df, {doc id: the expression's BM25 part, with ``term_idf`` for FTS5's IDF})."""
        key = (expression, tuple(weights))
        if key not in self._cache:
            df = self.df(expression)
            found: dict[int, float] = {}
            if df:
                factor = term_idf(self.n_docs, df) / fts_idf(self.n_docs, df)
                # One pass over every match costs ~1 ms per 1,000 matches: for a word in most of
                # 100,000 documents, asking for the few candidates alone is far cheaper.
                common = df > COMMON_MATCHES and df > 4 * len(self.ids)
                scan = store.phrase_bm25_among if common else store.phrase_bm25
                raw = scan(self.conn, expression, self.ids, weights)
                found = {doc_id: abs(value) * factor for doc_id, value in raw.items()}
            self._cache[key] = (df, found)
        return self._cache[key]


def rescore(
    conn: Any, parsed: ParsedQuery, clauses: ParsedQuery, names: set[Term], ids: Sequence[int]
) -> tuple[list[Scored], list[str]]:
    """Score candidates: BM25 recomputed per term, so FTS5's IDF can be replaced and each term
    can weigh the columns its own way (a name counts most in headings and option lists).

    BM25 is a sum over query phrases, so asking FTS5 for each phrase alone gives exact per-term
    parts. Optional stopwords add their part when present. An identifier scores its parts, plus
    its parts as one phrase (the exact name). Also returns the required terms that no document
    contains.
    """
    if not ids:
        return [], []
    parts = _Parts(conn, ids)
    sums = dict.fromkeys(ids, 0.0)
    clause_weight: dict[Term, float] = {}
    matched_share: dict[Term, dict[int, float]] = {}
    required = set(clauses.positive)
    short = len(required) <= STRICT_CLAUSES
    for term in parsed.positive:
        weights = NAME_WEIGHTS if term in names else PROSE_WEIGHTS
        shares: dict[int, float] = {}
        for atom in term.atoms:
            for doc_id, value in parts.get(fts_term(atom), weights)[1].items():
                sums[doc_id] += value
                shares[doc_id] = shares.get(doc_id, 0.0) + 1.0 / len(term.atoms)
        if term.kind == "ident":
            for doc_id, value in parts.get(fts_adjacent(term), weights)[1].items():
                sums[doc_id] += ADJACENCY_WEIGHT * value
        if short and term in names and not term.hyphenated:
            # Defining a name outweighs mentioning it, however long the defining page is (BM25's
            # length normalisation alone ranks os.rst.txt, 180 KB, below pages quoting os.environ).
            name = fts_adjacent(term) if term.kind == "ident" else fts_term(term)
            column = "options" if term.option else "headings"
            df, found = parts.get(f"{column} : {name}", weights)
            for doc_id in found:
                sums[doc_id] += DEFINES_BONUS * term_idf(parts.n_docs, df)
        if term in required:
            df = parts.df(fts_term(term))
            clause_weight[term] = term_idf(parts.n_docs, max(df, 1))
            matched_share[term] = shares
    absent = [t.text for t in clauses.positive if parts.df(fts_term(t)) == 0]
    total_weight = sum(clause_weight.values()) or 1.0
    scored = []
    for doc_id in ids:
        matched = sum(shares.get(doc_id, 0.0) for shares in matched_share.values())
        if not matched and not sums[doc_id]:
            continue
        coord = sum(w * matched_share[t].get(doc_id, 0.0) for t, w in clause_weight.items()) / total_weight
        scored.append(Scored(doc_id, normalize(sums[doc_id] * coord**COORD_POWER), matched))
    return scored, absent


def _hits(
    conn: Any,
    scored: list[Scored],
    parsed: ParsedQuery,
    n_required: int,
    contexts: Mapping[str, str],
    options: SearchOptions,
    collections: Mapping[str, Collection],
) -> list[Hit]:
    docs = store.documents_by_ids(conn, [item.doc_id for item in scored])
    texts = store.bodies(conn, [doc.hash for doc in docs.values()])
    terms = parsed.highlight_terms  # the required terms: a stopword line is no better snippet
    hits: list[Hit] = []
    for item in scored:
        doc = docs[item.doc_id]
        body = texts.get(doc.hash, "")
        snippet = best_snippet(body, terms)
        full = body if options.full else None
        hits.append(
            make_hit(
                doc,
                item.score,
                snippet,
                full,
                collections,
                contexts,
                matched_terms=math.floor(item.clauses),
                total_terms=n_required,
            )
        )
    return hits
