"""The real steps of `query` on an index: keyword and vector search, the models, the caches.

``query_steps`` builds the ``QuerySteps`` that hybrid/run.py drives, from whatever gives
keyword and vector search of the index (``api.Tansaku`` does; it is not imported here, so the
facade stays the only way in and this package below it). Models load only when their step runs.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import ModelMissing, NoVectors
from ..types import Hit, Notice, SearchResult
from .run import QuerySteps, VectorBatch

# Default seconds for reranking, sized by evals/bench_query.py (RESULTS-query.md): with Gemma 270M
# in both roles on 2 cores, 2 s made a warm query with a cached expansion take 2.2 s (p50), and the
# whole process 3.5 s; 0.75 s brings them to about 1 s and 2 s. The best fused candidates are
# reranked first, so a short budget spends itself where it matters most.
DEFAULT_RERANK_BUDGET = 0.75
RERANK_BUDGET_ENV = "TANSAKU_RERANK_BUDGET"
# A reranker that cannot read more of the query than this (an English model, a Chinese query)
# judges noise: it is not asked, as the vector list of such a query is left out of fusion.
MAX_UNREADABLE = 0.5
# Generation past this many seconds stops with TIMEOUT and keeps the lines it finished: a 270M
# model writes two or three lines in that time on 2 cores; a whole-process query stays near 3 s.
EXPANSION_TIMEOUT = 1.5


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
        unreadable = _unreadable_share(scorer, query)
        if unreadable > MAX_UNREADABLE:
            from ..models.rerank import RERANK_FAILED

            why = (
                f"the rerank model cannot read this query ({unreadable:.0%} of its tokens are unknown to"
                " its vocabulary): results keep their fused order"
            )
            skipped = Notice(RERANK_FAILED, why)
            return Reranked(scores=[(key, None) for key, _ in candidates], warnings=[skipped])
        seconds = rerank_budget(budget)
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


def rerank_budget(given: float | None) -> float:
    """The flag, else ``TANSAKU_RERANK_BUDGET``, else the default (a bad value is the default)."""
    if given is not None:
        return given
    try:
        return max(0.0, float(os.environ.get(RERANK_BUDGET_ENV, DEFAULT_RERANK_BUDGET)))
    except ValueError:
        return DEFAULT_RERANK_BUDGET


def _unreadable_share(scorer: Any, query: str) -> float:
    share = getattr(scorer, "unknown_share", None)
    return float(share(query)) if callable(share) else 0.0


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
