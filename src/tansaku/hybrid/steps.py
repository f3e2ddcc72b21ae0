"""The real steps of `query` on an index: keyword and vector search, the models, the caches.

``query_steps`` builds the ``QuerySteps`` that hybrid/run.py drives, from whatever gives
keyword and vector search of the index (``api.Tansaku`` does; it is not imported here, so the
facade stays the only way in and this package below it). Models load only when their step runs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import ModelMissing, NoVectors
from ..types import Hit, Notice, SearchResult
from .run import QuerySteps, VectorBatch

# Default seconds for reranking: with the rest of a one-shot query (start-up, probe, embedding,
# fusion: ~0.5 s warm) this keeps a query with a cached expansion within the 3 s target.
DEFAULT_RERANK_BUDGET = 2.0
# Generation past this many seconds stops with TIMEOUT and keeps the lines it finished.
EXPANSION_TIMEOUT = 4.0


class SearchIndex(Protocol):
    """What the steps need of the facade."""

    @property
    def index_path(self) -> Path: ...
    @property
    def config_path(self) -> Path: ...
    def config(self) -> Any: ...
    def search(
        self, query: str, *, collections: Sequence[str], limit: int | None, full: bool, snippets: bool
    ) -> SearchResult: ...
    def vector_search_texts(
        self,
        texts: Sequence[str],
        collections: Sequence[str],
        limit: int | None,
        min_score: float,
        full: bool,
        snippets: bool,
        verbose: bool = False,
    ) -> Any: ...


@contextlib.contextmanager
def query_steps(
    index: SearchIndex,
    conn: Any,
    collections: Sequence[str],
    pool: int | None,
    full: bool,
    *,
    expand: bool = True,
    rerank: bool = True,
    budget: float | None = None,
) -> Iterator[QuerySteps]:
    from ..search.keyword import add_snippets, is_name_lookup
    from ..store.llm_cache import open_cache

    cache = open_cache(index.index_path) if expand or rerank else None

    def keyword(text: str) -> SearchResult:
        return index.search(text, collections=collections, limit=pool, full=full, snippets=False)

    def vectors(texts: Sequence[str]) -> VectorBatch:
        return _vector_batch(index, conn, texts, collections, pool, full)

    def expansion(query: str, intent: str | None) -> Any:
        from ..models.generate import expand_query
        from ..models.roles import load_role_model

        generator, missing = load_role_model("generate", index.config_path, cache)
        if generator is None:
            from ..models.generate import Expansion

            return Expansion(query=query, lex=[query], vec=[query], fallback=True, warnings=[missing])
        return expand_query(query, generator, cache, intent=intent, timeout=EXPANSION_TIMEOUT)

    def passages(hits: Sequence[Hit], text: str, intent: str | None) -> list[str]:
        from ..search.keyword import highlight_terms
        from .passages import rerank_passages

        terms = highlight_terms(conn, text)
        intent_words = intent.split() if intent else []
        return rerank_passages(conn, index.config().collections, hits, terms, intent_words)

    def reranking(query: str, candidates: list[tuple[str, str]]) -> Any:
        from ..models.rerank import Reranked, rerank
        from ..models.roles import load_role_model

        scorer, missing = load_role_model("rerank", index.config_path, cache)
        if scorer is None:
            return Reranked(scores=[(key, None) for key, _ in candidates], warnings=[missing])
        seconds = DEFAULT_RERANK_BUDGET if budget is None else budget
        return rerank(query, candidates, scorer, cache, deadline=time.perf_counter() + seconds)

    try:
        yield QuerySteps(
            keyword,
            vectors,
            lambda text: is_name_lookup(conn, text),
            lambda text, hits: add_snippets(conn, text, hits),
            expand=expansion if expand else None,
            passages=passages if rerank else None,
            rerank=reranking if rerank else None,
        )
    finally:
        if cache is not None:
            cache.close()


def _vector_batch(
    index: SearchIndex,
    conn: Any,
    texts: Sequence[str],
    collections: Sequence[str],
    pool: int | None,
    full: bool,
) -> VectorBatch:
    """The vector side of `query`: each text without its exclusions is embedded (one batch), and
    the documents the exclusions rule out are dropped from its results."""
    from dataclasses import replace

    from ..search.keyword import excluded
    from ..search.query import without_exclusions
    from ..store import documents as store

    plain = [without_exclusions(text, lambda name: store.option_defined(conn, name)) for text in texts]
    wanted = [i for i, text in enumerate(plain) if text.strip()]
    results: list[tuple[SearchResult, float] | None] = [None] * len(texts)
    if not wanted:
        return VectorBatch(results)
    try:
        found = index.vector_search_texts([plain[i] for i in wanted], collections, pool, 0.0, full, False)
    except NoVectors as exc:
        why = f"{exc.message}; keyword results only ({exc.hint})"
        return VectorBatch(results, Notice("VECTORS_UNAVAILABLE", why))
    except ModelMissing as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return VectorBatch(results, Notice("MODEL_MISSING", f"{exc.message}; keyword results only{hint}"))
    for i, result, unknown in zip(wanted, found.results, found.unknown_shares, strict=True):
        ruled_out = excluded(conn, texts[i], [(h.collection, h.path) for h in result.hits])
        if ruled_out:
            kept = tuple(h for h in result.hits if (h.collection, h.path) not in ruled_out)
            result = replace(result, hits=kept, total=max(result.total - len(ruled_out), len(kept)))
        results[i] = (result, unknown)
    return VectorBatch(results, embed_seconds=found.embed_seconds)
