"""Vector search: embed the query, find the nearest chunks, keep the best chunk per document.

A collection with few vectors is scanned exactly (all its vectors against the query), so a small
collection searched with -c is never crowded out by a large one; larger ones use sqlite-vec's
k-nearest-neighbour search over the model's partition.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store import documents as store
from ..store import vectors as vec
from ..types import Collection, Hit, Notice, SearchResult, Snippet
from .hits import make_hit
from .query import parse_query, required_terms
from .snippets import best_snippet, split_lines

# Below this many vectors a collection is scanned exactly (numpy dot products take ~1 ms).
EXACT_SCAN_LIMIT = 20_000
DEFAULT_MIN_SCORE = 0.3


@dataclass(frozen=True)
class VectorQuery:
    query: str
    vector: bytes
    fingerprint: str
    dims: int
    limit: int | None
    min_score: float = DEFAULT_MIN_SCORE
    full: bool = False


def vsearch(
    conn: Any,
    request: VectorQuery,
    collections: Sequence[tuple[Collection, str]],
    contexts: Mapping[str, str],
    warnings: Sequence[Notice] = (),
    started: float | None = None,
) -> SearchResult:
    """``collections`` pairs each collection with its chunk-parameter fingerprint."""
    started = time.perf_counter() if started is None else started
    import numpy as np

    query = np.frombuffer(request.vector, dtype=np.float32)
    k = 200 if request.limit is None else max(request.limit * 8, 50)
    similarity: dict[int, float] = {}
    knn_done = False
    for collection, params in collections:
        count = vec.count_collection_vectors(conn, request.fingerprint, collection.name, params)
        if count == 0:
            continue
        if count <= EXACT_SCAN_LIMIT:
            rows = vec.collection_vectors(conn, request.dims, request.fingerprint, collection.name, params)
            ids = [row[0] for row in rows]
            matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)
            similarity.update(zip(ids, (matrix @ query).tolist(), strict=True))
        elif not knn_done:
            knn_done = True
            for embedding_id, distance in vec.knn(conn, request.dims, request.fingerprint, request.vector, k):
                similarity[embedding_id] = 1.0 - distance
    best = _best_chunk_per_document(conn, request.fingerprint, similarity, collections)
    ranked = sorted(best.values(), key=lambda item: (-item[1], item[0].id))
    ranked = [item for item in ranked if item[1] >= request.min_score]
    total = len(ranked)
    if request.limit is not None:
        ranked = ranked[: request.limit]
    hits = _hits(conn, ranked, request, contexts, {c.name: c for c, _ in collections})
    return SearchResult(
        query=request.query,
        mode="vsearch",
        hits=tuple(hits),
        total=total,
        limit=request.limit,
        warnings=tuple(warnings),
        took_ms=(time.perf_counter() - started) * 1000,
        collections=tuple(c.name for c, _ in collections),
    )


def _best_chunk_per_document(
    conn: Any,
    fingerprint: str,
    similarity: Mapping[int, float],
    collections: Sequence[tuple[Collection, str]],
) -> dict[int, tuple[store.StoredDocument, float, vec.VectorHit]]:
    wanted = {c.name: params for c, params in collections}
    hits = vec.chunks_for_embeddings(conn, fingerprint, list(similarity))
    by_hash: dict[str, list[vec.VectorHit]] = {}
    for hit in hits:
        by_hash.setdefault(hit.hash, []).append(hit)
    best: dict[int, tuple[store.StoredDocument, float, vec.VectorHit]] = {}
    for doc in store.documents_with_hashes(conn, list(by_hash)):
        if doc.collection not in wanted:
            continue
        for hit in by_hash[doc.hash]:
            if hit.chunk_params != wanted[doc.collection]:
                continue
            score = similarity[hit.embedding_id]
            if doc.id not in best or score > best[doc.id][1]:
                best[doc.id] = (doc, score, hit)
    return best


def _hits(
    conn: Any,
    ranked: Sequence[tuple[store.StoredDocument, float, vec.VectorHit]],
    request: VectorQuery,
    contexts: Mapping[str, str],
    collections: Mapping[str, Collection],
) -> list[Hit]:
    texts = store.bodies(conn, [doc.hash for doc, _, _ in ranked])
    terms = required_terms(parse_query(request.query)).highlight_terms
    hits = []
    for doc, score, chunk in ranked:
        body = texts.get(doc.hash, "")
        snippet = chunk_snippet(body, chunk.start_line, chunk.end_line, terms)
        full = body if request.full else None
        lines = (chunk.start_line, chunk.end_line)
        hits.append(make_hit(doc, score, snippet, full, collections, contexts, chunk_lines=lines))
    return hits


def chunk_snippet(body: str, start_line: int, end_line: int, terms: Sequence[str]) -> Snippet:
    """The best lines inside the matching chunk, numbered as in the source file."""
    lines = split_lines(body)[start_line - 1 : end_line]
    inner = best_snippet("\n".join(lines), terms)
    return Snippet(start_line=start_line + inner.start_line - 1, lines=inner.lines)
