"""Keyword search: FTS5 + BM25 over the chosen collections, with an honest partial-match fallback."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import EmptyQuery
from ..store import documents as store
from ..types import Collection, Hit, Notice, SearchResult
from .hits import make_hit
from .query import ParsedQuery, fts_expression, fts_term, parse_query, required_terms
from .snippets import best_snippet

# How many documents the "match some terms" fallback considers.
FALLBACK_CANDIDATES = 200
# FTS5 orders candidates; tansaku re-scores a pool this many times the limit (at least
# MIN_POOL), so its own IDF can reorder documents near the cut-off.
POOL_FACTOR = 4
MIN_POOL = 40


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


def smooth_idf(n_docs: int, df: int) -> float:
    """IDF that stays positive for common terms (Lucene's form): a term in most documents of a
    small collection still counts a little, so its documents do not all score 0.00."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def search(
    conn: Any,
    query: str,
    collections: Sequence[Collection],
    contexts: Mapping[str, str],
    options: SearchOptions,
    warnings: Sequence[Notice] = (),
) -> SearchResult:
    started = time.perf_counter()
    parsed = parse_query(query)
    required = required_terms(parsed)
    expression = fts_expression(required, "all")
    if expression is None:
        raise EmptyQuery(
            f"the query {query!r} has nothing to search for",
            hint="give at least one word that is not negated with '-'",
        )
    notices = list(warnings)
    pool = None if options.limit is None else max(options.limit * POOL_FACTOR, MIN_POOL)
    candidates, total = _candidates(conn, expression, collections, pool)
    partial = False
    if not candidates and len(required.positive) > 1:
        any_expression = fts_expression(required, "any")
        if any_expression is not None:
            candidates, total = _candidates(conn, any_expression, collections, FALLBACK_CANDIDATES)
            partial = bool(candidates)
    scored = rescore(conn, parsed, required, candidates)
    if partial:
        notices.append(
            Notice(
                "PARTIAL_MATCH",
                f"no document contains all {len(required.positive)} terms; showing documents that "
                "contain some of them, most terms first",
            )
        )
        # Documents matching more of the required terms first, then score.
        scored.sort(key=lambda item: (-item[2], -item[1], item[0]))
    else:
        scored.sort(key=lambda item: (-item[1], item[0]))
    scored = [item for item in scored if item[1] >= options.min_score]
    if options.limit is not None:
        scored = scored[: options.limit]
    hits = _hits(
        conn, scored, required, len(required.positive), contexts, options, {c.name: c for c in collections}
    )
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
    conn: Any, expression: str, collections: Sequence[Collection], pool: int | None
) -> tuple[list[int], int]:
    """Best-first document ids per collection (each collection gets its own pool) and the total."""
    ids: list[int] = []
    total = 0
    for collection in collections:
        rows = store.keyword_search(conn, expression, collection.name, pool)
        ids.extend(doc_id for doc_id, _ in rows)
        total += store.keyword_count(conn, expression, collection.name) if pool is not None else len(rows)
    return ids, total


def rescore(
    conn: Any, parsed: ParsedQuery, required: ParsedQuery, ids: Sequence[int]
) -> list[tuple[int, float, int]]:
    """(doc id, score 0..1, required terms matched) with BM25 recomputed per term.

    BM25 is a sum over query phrases, so asking FTS5 for each phrase alone and swapping its IDF
    for ``smooth_idf`` gives exact per-term parts. Optional stopwords add their part when present.
    A partial match is scaled by the fraction of required terms present, so a document with 2 of
    3 terms never outranks one with all 3 on score alone.
    """
    if not ids:
        return []
    n_docs = max(store.document_total(conn), 1)
    sums = dict.fromkeys(ids, 0.0)
    matched = dict.fromkeys(ids, 0)
    required_set = set(required.positive)
    for term in parsed.positive:
        phrase = fts_term(term)
        df = store.phrase_frequency(conn, phrase)
        if df == 0:
            continue
        factor = smooth_idf(n_docs, df) / fts_idf(n_docs, df)
        for doc_id, raw in store.phrase_bm25(conn, phrase, ids).items():
            sums[doc_id] += abs(raw) * factor
            if term in required_set:
                matched[doc_id] += 1
    n_required = max(len(required_set), 1)
    return [
        (doc_id, normalize(sums[doc_id]) * matched[doc_id] / n_required, matched[doc_id])
        for doc_id in ids
        if matched[doc_id]
    ]


def _hits(
    conn: Any,
    scored: list[tuple[int, float, int]],
    parsed: ParsedQuery,
    n_required: int,
    contexts: Mapping[str, str],
    options: SearchOptions,
    collections: Mapping[str, Collection],
) -> list[Hit]:
    docs = store.documents_by_ids(conn, [doc_id for doc_id, _, _ in scored])
    texts = store.bodies(conn, [doc.hash for doc in docs.values()])
    terms = parsed.highlight_terms  # the required terms: a stopword line is no better snippet
    hits: list[Hit] = []
    for doc_id, score, matched in scored:
        doc = docs[doc_id]
        body = texts.get(doc.hash, "")
        snippet = best_snippet(body, terms)
        full = body if options.full else None
        hits.append(
            make_hit(
                doc,
                score,
                snippet,
                full,
                collections,
                contexts,
                matched_terms=matched,
                total_terms=n_required,
            )
        )
    return hits
