"""Vector search of one or more texts against the configured embedding model's vectors.

What `vsearch` runs for its query and `query` for the query and its vec/hyde lines: the texts are
embedded in one batch, then each is searched per collection (search/vector.py), all in one read
snapshot so that vectors, chunks and counts agree while an `embed` commits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NoVectors
from ..models.languages import MIN_READABLE, UNREADABLE_TOKENS
from ..types import Collection, Notice, SearchResult

if TYPE_CHECKING:
    from ..config import settings
    from ..store.fields import DocumentFilter
    from .transcripts import TurnQuery
    from .vector_cache import VectorCache


@dataclass(frozen=True)
class VectorRequest:
    limit: int | None
    min_score: float
    full: bool = False
    snippets: bool = True
    verbose: bool = False
    # `vsearch --level ...` (search/transcripts.py): transcript collections by turn, grouped.
    levels: TurnQuery | None = None
    where: DocumentFilter | None = None  # --where (store/fields.py)
    all_copies: bool = False  # --all-copies: copies of a text each listed (search/copies.py)


@dataclass(frozen=True)
class VectorResults:
    results: list[SearchResult]  # per text, in order
    unreadable_shares: list[float]  # per text: the share of its tokens the embedder cannot read
    embed_seconds: float


def search_texts(
    conn: Any,
    texts: Sequence[str],
    request: VectorRequest,
    *,
    config_path: Path,
    config: settings.Config,
    chosen: Sequence[Collection],
    warnings: Sequence[Notice],
    cache: VectorCache,
    started: float,
) -> VectorResults:
    """Raises NoVectors when none of ``chosen`` has vectors of the model, ModelMissing when the
    model is not on this machine, an EndpointError when the model's server fails (past
    TANSAKU_REMOTE_QUERY_TIMEOUT, or with an answer that is not a usable vector)."""
    from ..index.chunks import params_for
    from ..index.embed import model_identity, pack
    from ..models.embedding import embed_model, embedder_for, prompt_format_of
    from ..models.threads import resolve_threads
    from ..store.backend import db
    from ..store.backend import vectors as vec
    from .query import model_text
    from .vector import VectorQuery, vsearch

    ref = embed_model(config_path)
    prompt = prompt_format_of(ref, config_path)
    vec.load_extension(conn)
    db.read_snapshot(conn)  # one snapshot for the counts and the search
    embedder: Any = None
    vectors: list[list[float]] = []
    embed_seconds = 0.0
    queries = [prompt.query(model_text(text)) for text in texts]
    if ref.endpoint is None:
        identity = model_identity(conn, str(ref.local_path), prompt)
    else:
        # The server's dimensions today say which of the model's vectors to search: asked with
        # the queries themselves, once the index is known to hold some.
        embedding_started = time.perf_counter()
        identity, embedder, vectors = _remote_queries(conn, ref, prompt, queries, config_path)
        embed_seconds = time.perf_counter() - embedding_started
    pairs = [(c, params_for(c).fingerprint()) for c in chosen]
    counts = [
        cache.memo(
            ("counts", c.name, p, identity.fingerprint),
            lambda c=c, p=p: vec.collection_vector_counts(conn, c.name, p, identity.fingerprint),
        )
        for c, p in pairs
    ]
    quick = [
        cache.memo(
            ("quick", c.name, p, identity.fingerprint),
            lambda c=c, p=p: vec.collection_quick_count(conn, c.name, p, identity.fingerprint),
        )
        for c, p in pairs
    ]
    notices = [*warnings, *vector_warnings(chosen, counts, quick)]
    if not any(embedded for embedded, _, _ in counts) and not any(quick):
        other = sum(stale for _, _, stale in counts)
        why = f" ({other} chunks have vectors from another model)" if other else ""
        names = ", ".join(c.name for c in chosen) or "any collection"
        raise NoVectors(
            f"no vectors for the embedding model {ref.reference} in {names}{why}",
            hint="run `tansaku embed`" + (" (add -c NAME for one collection)" if len(chosen) > 1 else ""),
        )
    if embedder is None:
        embedder = embedder_for(
            ref, config_path, threads=resolve_threads(config_path).query, verbose=request.verbose
        )
        embedding_started = time.perf_counter()
        vectors = embedder.embed(queries)
        embed_seconds = time.perf_counter() - embedding_started
    allowed = None
    if request.where is not None:
        from ..store.backend import fields

        allowed = fields.matching_ids(conn, request.where)
    results = []
    for text, vector in zip(texts, vectors, strict=True):
        query = VectorQuery(
            text,
            pack(vector),
            identity.fingerprint,
            embedder.dims,
            request.limit,
            request.min_score,
            request.full,
            request.snippets,
            allowed,
            request.all_copies,
        )
        if request.levels is None:
            results.append(vsearch(conn, query, pairs, config.contexts, notices, started, cache))
        else:
            from .transcripts import vector_levels

            results.append(
                vector_levels(conn, query, pairs, request.levels, config.contexts, notices, started, cache)
            )
    return VectorResults(results, [embedder.unreadable_share(text) for text in texts], embed_seconds)


def _remote_queries(
    conn: Any, ref: Any, prompt: Any, queries: list[str], config_path: Path
) -> tuple[Any, Any, list[list[float]]]:
    """(identity, embedder, query vectors) for an endpoint model. No request when the index holds
    none of its vectors (the identity then matches nothing: NO_VECTORS). Vectors of dimensions
    the index holds none of for that model mean the server serves another model under the same
    name: ENDPOINT_DIMENSIONS, naming the fix."""
    from ..errors import EndpointDimensions
    from ..index.embed import remote_identity, remote_records
    from ..models.embedding import embedder_for
    from ..store.backend import vectors as vec

    endpoint = ref.endpoint
    held = sorted({record.dims for record in remote_records(vec.models(conn), endpoint)})
    if not held:
        return remote_identity(endpoint, 0, prompt), None, []
    embedder = embedder_for(ref, config_path)
    embedder.forget_dims()  # the server may have changed since this process last asked
    # A person waits for these: a few seconds (TANSAKU_REMOTE_QUERY_TIMEOUT), not embed's minute.
    vectors = embedder.embed_queries(queries)
    dims = len(vectors[0]) if vectors else held[-1]
    if dims not in held:
        shown = " or ".join(str(d) for d in held)
        raise EndpointDimensions(
            f"{endpoint.base_url} answers {dims}-dimension vectors for {endpoint.model!r}, but the"
            f" index holds that model's vectors at {shown}: the server's model changed under the same name",
            hint="run `tansaku embed` to embed again with the model it serves now",
            got=dims,
            expected=held,
        )
    return remote_identity(endpoint, dims, prompt), embedder, vectors


def vector_warnings(
    chosen: Sequence[Collection], counts: Sequence[tuple[int, int, int]], quick: Sequence[int] = ()
) -> list[Notice]:
    """STALE_VECTORS, QUICK_VECTORS and PENDING_VECTORS for the searched collections; ``quick``:
    each one's chunks that have only a quick vector so far."""
    quick = list(quick) or [0] * len(chosen)
    notices: list[Notice] = []
    stale = sum(s for _, _, s in counts)
    if stale:
        notices.append(
            Notice(
                "STALE_VECTORS",
                f"{stale} chunks have vectors from another embedding model only; `tansaku embed` redoes them",
            )
        )
    partial = sum(quick)
    if partial:
        notices.append(
            Notice(
                "QUICK_VECTORS",
                f"{partial} chunks are searched by their quick vector only (title, headings and the"
                " first words of each paragraph) until `tansaku embed` computes their full ones",
            )
        )
    pending = [
        (c.name, total - embedded - fast)
        for c, (embedded, total, _), fast in zip(chosen, counts, quick, strict=True)
        if total > embedded + fast
    ]
    if pending:
        listed = ", ".join(f"{name} ({n})" for name, n in pending)
        notices.append(
            Notice(
                "PENDING_VECTORS", f"chunks without vectors are not searched: {listed}; run `tansaku embed`"
            )
        )
    return notices


QUERY_UNREADABLE = "QUERY_UNREADABLE"


def with_unreadable_warning(result: SearchResult, unreadable_share: float) -> SearchResult:
    """``result``, warned QUERY_UNREADABLE when the embedder cannot read most of the query (an
    English model, a Chinese query): its nearest chunks are then noise, however they score; and
    QUERY_TRUNCATED when the embedder read only the start of a long query (as keyword search
    says when it searches only the first terms)."""
    from dataclasses import replace

    from ..limits import MAX_MODEL_QUERY_CHARS, MAX_QUERY_TERMS
    from .query import model_text

    notices = []
    read = model_text(result.query)
    if read != result.query:
        notices.append(
            Notice(
                "QUERY_TRUNCATED",
                f"the embedding model read the first {len(read.split())} words ({len(read)} characters) of"
                f" the query's {len(result.query.split())} (at most {MAX_QUERY_TERMS} words and"
                f" {MAX_MODEL_QUERY_CHARS} characters per query)",
            )
        )
    if unreadable_share > 1.0 - MIN_READABLE:
        notices.append(
            Notice(
                QUERY_UNREADABLE,
                f"the embedding model cannot read this query ({unreadable_share:.0%} {UNREADABLE_TOKENS}),"
                " so vector search cannot answer it; use `search` (or `query`, which leaves such vectors"
                " out)",
            )
        )
    if not notices:
        return result
    return replace(result, warnings=(*result.warnings, *notices))
