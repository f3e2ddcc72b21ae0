"""Keyword search: FTS5 + BM25 over the chosen collections, with an honest partial-match fallback."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.contexts import contexts_for
from ..errors import EmptyQuery
from ..paths import virtual_path
from ..store import documents as store
from ..types import Collection, Hit, Notice, SearchResult
from .query import ParsedQuery, Term, fts_expression, fts_term, parse_query
from .snippets import best_snippet

# How many documents the "match some terms" fallback considers before counting terms per document.
FALLBACK_CANDIDATES = 200


@dataclass(frozen=True)
class SearchOptions:
    limit: int | None = 5  # None = all
    min_score: float = 0.0
    full: bool = False


def normalize_bm25(raw: float) -> float:
    """FTS5's bm25 is negative (better = lower); map |x| into 0..1, monotonically."""
    x = abs(raw)
    return x / (1.0 + x)


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
    expression = fts_expression(parsed, "all")
    if expression is None:
        raise EmptyQuery(
            f"the query {query!r} has nothing to search for",
            hint="give at least one word that is not negated with '-'",
        )
    notices = list(warnings)
    scored: list[tuple[int, float, int]] = []  # (doc id, score, matched terms)
    total = 0
    for collection in collections:
        rows = store.keyword_search(conn, expression, collection.name, options.limit)
        total += store.keyword_count(conn, expression, collection.name) if options.limit else len(rows)
        n_terms = len(parsed.positive)
        scored.extend((doc_id, normalize_bm25(raw), n_terms) for doc_id, raw in rows)
    if not scored and len(parsed.positive) > 1:
        scored, total = _partial_matches(conn, parsed, collections)
        if scored:
            notices.append(
                Notice(
                    "PARTIAL_MATCH",
                    f"no document contains all {len(parsed.positive)} terms; showing documents that "
                    "contain some of them, most terms first",
                )
            )
    scored.sort(key=lambda item: (-item[2], -item[1]))
    scored = [item for item in scored if item[1] >= options.min_score]
    if options.limit is not None:
        scored = scored[: options.limit]
    hits = _hits(conn, scored, parsed, contexts, options, {c.name: c for c in collections})
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


def _partial_matches(
    conn: Any, parsed: ParsedQuery, collections: Sequence[Collection]
) -> tuple[list[tuple[int, float, int]], int]:
    """Rank documents by how many query terms they contain, then by BM25 of the OR query."""
    any_expression = fts_expression(parsed, "any")
    if any_expression is None:
        return [], 0
    negatives = "".join(f" NOT {fts_term(_positive(t))}" for t in parsed.negative)
    candidates: list[tuple[int, float]] = []
    total = 0
    for collection in collections:
        candidates.extend(store.keyword_search(conn, any_expression, collection.name, FALLBACK_CANDIDATES))
        total += store.keyword_count(conn, any_expression, collection.name)
    ids = [doc_id for doc_id, _ in candidates]
    matched = dict.fromkeys(ids, 0)
    for term in parsed.positive:
        for doc_id in store.matching_ids(conn, fts_term(term) + negatives, ids):
            matched[doc_id] += 1
    n_terms = len(parsed.positive)
    # The score says how partial the match is: BM25 scaled by the fraction of terms present.
    return [
        (doc_id, normalize_bm25(raw) * matched[doc_id] / n_terms, matched[doc_id])
        for doc_id, raw in candidates
        if matched[doc_id]
    ], total


def _positive(term: Term) -> Term:
    return Term(term.text, term.kind, False)


def is_stale(disk_path: str, size: int, mtime_ns: int) -> bool:
    try:
        st = os.stat(disk_path)
    except OSError:
        return True
    return st.st_size != size or st.st_mtime_ns != mtime_ns


def _hits(
    conn: Any,
    scored: list[tuple[int, float, int]],
    parsed: ParsedQuery,
    contexts: Mapping[str, str],
    options: SearchOptions,
    collections: Mapping[str, Collection],
) -> list[Hit]:
    docs = store.documents_by_ids(conn, [doc_id for doc_id, _, _ in scored])
    texts = store.bodies(conn, [doc.hash for doc in docs.values()])
    terms = parsed.highlight_terms
    hits: list[Hit] = []
    for doc_id, score, matched in scored:
        doc = docs[doc_id]
        body = texts.get(doc.hash, "")
        disk_path = os.path.join(collections[doc.collection].path, *doc.path.split("/"))
        hits.append(
            Hit(
                docid=doc.hash[:6],
                score=score,
                collection=doc.collection,
                path=doc.path,
                virtual_path=virtual_path(doc.collection, doc.path),
                disk_path=disk_path,
                title=doc.title,
                contexts=contexts_for(contexts, doc.collection, doc.path),
                snippet=best_snippet(body, terms),
                stale=is_stale(disk_path, doc.size, doc.mtime_ns),
                matched_terms=matched,
                total_terms=len(parsed.positive),
                body=body if options.full else None,
            )
        )
    return hits
