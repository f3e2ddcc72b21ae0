"""Vector search: embed the query, score the chunks of the searched collections, keep the best
chunk per document.

Scoring is exact: each searched collection's own vectors are compared with the query (one matrix
product over vectors held in memory, see ``vector_cache``), so a small collection searched next to
a big one is never crowded out. A model whose vectors exceed the memory budget is searched with
sqlite-vec's KNN instead, restricted to each collection's own vectors.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store.backend import documents as store
from ..store.backend import vectors as vec
from ..types import Collection, Hit, Notice, SearchResult, Snippet
from .copies import first_copies, with_languages, with_other_paths
from .hits import make_hit
from .pages import page_starts
from .query import parse_query, required_terms
from .snippets import chunk_snippet
from .vector_cache import CollectionVectors, ModelVectors, VectorCache, collection_vectors

DEFAULT_MIN_SCORE = 0.3
# On disk, how many nearest vectors per collection are fetched for each wanted result (several
# chunks of one document can be among the nearest; more are fetched when they were not enough).
KNN_OVERSAMPLE = 8


@dataclass(frozen=True)
class VectorQuery:
    query: str
    vector: bytes
    fingerprint: str
    dims: int
    limit: int | None
    min_score: float = DEFAULT_MIN_SCORE
    full: bool = False
    snippets: bool = True  # `query` asks for none, then fills in the ones it shows
    # --where: the ids of the documents whose fields pass (None: every document).
    allowed: frozenset[int] | None = None
    # False: each text once, its other paths in the hit's also_at (search/copies.py), before the
    # limit; True (--all-copies): every document, copies included.
    all_copies: bool = False


# Without --all-copies, the documents first ordered are this many times the limit, so a few
# copies among them still leave ``limit`` distinct texts (else every passing one is ordered).
COPY_HEADROOM = 4


@dataclass(frozen=True)
class _Ranked:
    doc: store.StoredDocument
    score: float
    start_line: int
    end_line: int


def vsearch(
    conn: Any,
    request: VectorQuery,
    collections: Sequence[tuple[Collection, str]],
    contexts: Mapping[str, str],
    warnings: Sequence[Notice] = (),
    started: float | None = None,
    cache: VectorCache | None = None,
) -> SearchResult:
    """``collections`` pairs each collection with its chunk-parameter fingerprint; ``cache`` keeps
    vectors between calls (without one, they are read for this call only)."""
    started = time.perf_counter() if started is None else started
    scored, total_exact = _score(conn, request, collections, cache or VectorCache(None))
    ranked, total, languages = _top_documents(conn, scored, request)
    hits = _hits(conn, ranked, request, contexts, {c.name: c for c, _ in collections})
    if not request.all_copies:
        docs = [item.doc for item in ranked]
        hits = with_other_paths(conn, hits, docs, {c.name for c, _ in collections})
        hits = with_languages(hits, [doc.id for doc in docs], languages)
    return SearchResult(
        query=request.query,
        mode="vsearch",
        hits=tuple(hits),
        total=total,
        limit=request.limit,
        warnings=tuple(warnings),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=tuple(c.name for c, _ in collections),
        total_exact=total_exact,
    )


def _score(
    conn: Any, request: VectorQuery, collections: Sequence[tuple[Collection, str]], cache: VectorCache
) -> tuple[list[tuple[CollectionVectors, Any, Any]], bool]:
    """Each collection's chunk windows with their scores and their documents' best scores, and
    whether every vector was scored (not only sqlite-vec's nearest)."""
    import numpy as np

    query = np.frombuffer(request.vector, dtype=np.float32)
    # --all wants every document's score: that means reading every vector, whatever the budget.
    model = cache.model(conn, request.dims, request.fingerprint, required=request.limit is None)
    all_scores = _AllScores(model, query)
    scored: list[tuple[CollectionVectors, Any, Any]] = []  # (vectors, entry scores, document scores)
    total_exact = True
    for collection, params in collections:
        if model is None:
            found = _nearest(conn, request, collection.name, params)
            if found is None:
                continue
            vectors, entry_scores, exhausted = found
            total_exact = total_exact and exhausted
        else:
            vectors = cache.collection(conn, request.fingerprint, collection.name, params, model)
            if vectors.empty:
                continue
            entry_scores = all_scores.of(vectors.rows)
        best = np.maximum.reduceat(entry_scores, vectors.starts) * vectors.doc_weights
        if request.allowed is not None:
            # Filtered out before the limit: below any floor, so never ranked nor counted.
            passes = np.isin(vectors.doc_ids, np.fromiter(request.allowed, dtype=np.int64))
            best = np.where(passes, best, -np.inf)
        scored.append((vectors, entry_scores, best))
    return scored, total_exact


@dataclass(frozen=True)
class NearestChunks:
    """The best-scoring chunk windows of some collections, best first (for transcript levels,
    which group them by turn rather than by document)."""

    doc_ids: list[int]
    start_lines: list[int]
    scores: list[float]
    exhausted: bool  # these are all the windows at or above the floor


def nearest_chunks(
    conn: Any,
    request: VectorQuery,
    collections: Sequence[tuple[Collection, str]],
    cache: VectorCache,
    count: int | None,
) -> NearestChunks:
    """The ``count`` best chunk windows (all with None) scoring at least ``request.min_score``."""
    import numpy as np

    scored, exact = _score(conn, request, collections, cache)
    if not scored:
        return NearestChunks([], [], [], True)
    scores = np.concatenate([s for _, s, _ in scored]).astype(np.float64)
    docs = np.concatenate([np.repeat(v.doc_ids, np.diff(np.r_[v.starts, len(s)])) for v, s, _ in scored])
    lines = np.concatenate([v.start_lines for v, _, _ in scored])
    passing = np.flatnonzero(scores >= request.min_score)
    exhausted = count is None or len(passing) <= count
    if not exhausted:
        assert count is not None
        passing = passing[np.argpartition(-scores[passing], count - 1)[:count]]
    order = passing[np.lexsort((lines[passing], docs[passing], -scores[passing]))]
    return NearestChunks(
        docs[order].tolist(), lines[order].tolist(), scores[order].tolist(), exhausted and exact
    )


class _AllScores:
    """The query against the model's vectors: all of them in one product (shared by the searched
    collections), or only a small collection's own rows."""

    def __init__(self, model: ModelVectors | None, query: Any) -> None:
        self.model, self.query = model, query
        self._all: Any | None = None

    def of(self, rows: Any) -> Any:
        """The rows' scores; -inf for a row with no direction (ModelVectors.unusable)."""
        import numpy as np

        model = self.model
        assert model is not None
        if self._all is not None:
            return self._all[rows]
        # Gathering rows costs about 8 times a product over them (measured): worth it below ~1/10.
        if len(rows) * 10 < len(model.ids):
            scores = model.matrix[rows] @ self.query
            if model.unusable is not None:
                scores = np.where(model.unusable[rows], -np.inf, scores)
            return scores
        self._all = model.matrix @ self.query
        if model.unusable is not None:
            self._all[model.unusable] = -np.inf
        return self._all[rows]


def _nearest(
    conn: Any, request: VectorQuery, collection: str, params: str
) -> tuple[CollectionVectors, Any, bool] | None:
    """sqlite-vec's nearest chunks of one collection: the entries they belong to, their scores, and
    whether that was all of the collection's vectors (then the count of documents is exact)."""
    import numpy as np

    assert request.limit is not None  # --all reads every vector: see vsearch
    wanted = max(request.limit * KNN_OVERSAMPLE, 50)
    while True:
        nearest = vec.knn(conn, request.dims, request.fingerprint, request.vector, wanted, collection, params)
        if not nearest:
            return None
        similarity = {embedding_id: 1.0 - distance for embedding_id, distance in nearest}
        entries = vec.entries_for_embeddings(conn, request.fingerprint, collection, params, list(similarity))
        exhausted = len(nearest) < wanted
        documents = set(entries.doc_ids)
        if request.allowed is not None:
            documents &= request.allowed
        # Many chunks of few documents (or of documents --where leaves out) can fill the nearest:
        # fetch more until there are enough.
        if exhausted or len(documents) >= request.limit or wanted >= vec.KNN_MAX:
            break
        wanted = min(wanted * 4, vec.KNN_MAX)
    vectors = collection_vectors(entries, None, store.paths_by_ids(conn, set(entries.doc_ids)))
    scores = np.array([similarity[i] for i in entries.embedding_ids], dtype=np.float64)
    return vectors, scores, exhausted


def _top_documents(
    conn: Any, scored: Sequence[tuple[CollectionVectors, Any, Any]], request: VectorQuery
) -> tuple[list[_Ranked], int, dict[int, tuple[str, ...]]]:
    """The best documents over all collections by (score descending, document id), how many
    reach the floor, and the languages of the translations of those shown (search/copies.py)."""
    import numpy as np

    if not scored:
        return [], 0, {}
    doc_scores = np.concatenate([s for _, _, s in scored])
    doc_ids = np.concatenate([v.doc_ids for v, _, _ in scored])
    owner = np.concatenate([np.full(len(v.doc_ids), i) for i, (v, _, _) in enumerate(scored)])
    position = np.concatenate([np.arange(len(v.doc_ids)) for v, _, _ in scored])
    passing = np.flatnonzero(doc_scores >= request.min_score)
    total = len(passing)
    languages: dict[int, tuple[str, ...]] = {}
    if request.all_copies:
        order = _best(doc_scores, doc_ids, passing, request.limit)[: request.limit]
    else:
        # Each text once (search/copies.py), counted before the limit.
        limit = request.limit
        order = _best(doc_scores, doc_ids, passing, None if limit is None else limit * COPY_HEADROOM)
        distinct = first_copies(conn, doc_ids[order].tolist(), limit)
        if limit is not None and len(distinct.kept) < limit and len(order) < total:  # many: all of them
            order = _best(doc_scores, doc_ids, passing, None)
            distinct = first_copies(conn, doc_ids[order].tolist(), limit)
        order = order[distinct.kept]
        total = max(len(distinct.kept), total - distinct.hidden)
        languages = distinct.languages
    docs = store.documents_by_ids(conn, doc_ids[order].tolist())
    ranked: list[_Ranked] = []
    for i in order:
        vectors, entry_scores, _ = scored[owner[i]]
        first = vectors.starts[position[i]]
        last = vectors.starts[position[i] + 1] if position[i] + 1 < len(vectors.starts) else len(entry_scores)
        best = first + int(np.argmax(entry_scores[first:last]))
        doc = docs.get(int(doc_ids[i]))
        if doc is not None:
            score = float(doc_scores[i])
            ranked.append(_Ranked(doc, score, int(vectors.start_lines[best]), int(vectors.end_lines[best])))
    return ranked, total, languages


def _best(doc_scores: Any, doc_ids: Any, passing: Any, count: int | None) -> Any:
    """The positions of the ``count`` best of ``passing`` (all with None) by (score descending,
    document id); a tie with the count-th score may add a few more."""
    import numpy as np

    total = len(passing)
    if count is not None and total > count:
        # Everything tied with the count-th score stays, so the id tie-break below is exact.
        cutoff = np.partition(doc_scores[passing], total - count)[total - count]
        passing = passing[doc_scores[passing] >= cutoff]
    return passing[np.lexsort((doc_ids[passing], -doc_scores[passing]))]


def _hits(
    conn: Any,
    ranked: Sequence[_Ranked],
    request: VectorQuery,
    contexts: Mapping[str, str],
    collections: Mapping[str, Collection],
) -> list[Hit]:
    wanted = request.snippets or request.full
    texts = store.bodies(conn, [item.doc.hash for item in ranked]) if wanted else {}
    pages = page_starts(conn, [item.doc for item in ranked])
    terms = required_terms(parse_query(request.query)).highlight_terms
    hits = []
    for item in ranked:
        body = texts.get(item.doc.hash, "")
        if request.snippets:
            snippet = chunk_snippet(body, item.start_line, item.end_line, terms)
        else:
            snippet = Snippet(item.start_line, ())
        full = body if request.full else None
        lines = (item.start_line, item.end_line)
        hits.append(
            make_hit(item.doc, item.score, snippet, full, collections, contexts, pages, chunk_lines=lines)
        )
    return hits
