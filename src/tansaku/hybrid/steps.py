"""The real steps of `query` on an index: keyword and vector search, the models, the caches.

``query_steps`` builds the ``QuerySteps`` that hybrid/run.py drives, from whatever gives
keyword and vector search of the index (``api.Tansaku`` does; it is not imported here, so the
facade stays the only way in and this package below it). Models load only when their step runs.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import EndpointError, ModelMissing, NoVectors
from ..models.languages import MIN_READABLE, UNREADABLE_TOKENS
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
MAX_UNREADABLE = 1.0 - MIN_READABLE
# Generation past this many seconds stops with TIMEOUT and keeps the lines it finished: a 270M
# model writes two or three lines in that time on 2 cores. 1.2 s gave a one-shot query the same
# p50 (3.4 s, Gemma 270M in both roles, evals/RESULTS-query.md) with three times the timeouts.
EXPANSION_TIMEOUT = 1.5


class SearchIndex(Protocol):
    """What the steps need of the facade."""

    @property
    def backend(self) -> Any: ...
    @property
    def config_path(self) -> Path: ...
    def config(self) -> Any: ...
    def search(
        self,
        query: str,
        *,
        collections: Sequence[str],
        limit: int | None,
        full: bool,
        snippets: bool,
        where: Sequence[str] = (),
        all_copies: bool = False,
    ) -> SearchResult: ...
    def search_levels(
        self, query: str, *, collections: Sequence[str], limit: int | None, full: bool, **levels: Any
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
        levels: Any = None,
        where: Sequence[str] = (),
        all_copies: bool = False,
    ) -> Any: ...


@contextlib.contextmanager
def query_steps(
    index: SearchIndex,
    conn: Any,
    collections: Sequence[str],
    pool: int | None,
    full: bool,
    *,
    expand: bool | None = None,
    rerank: bool | None = None,
    budget: float | None = None,
    levels: dict[str, Any] | None = None,
    where: Sequence[str] = (),
    all_copies: bool = False,
) -> Iterator[QuerySteps]:
    """``levels`` (level, roles, since, until, project): transcript collections are searched by
    turn and aggregated to that level on both sides, so the lists name the same units.
    ``where``: both lists keep only the documents whose front-matter fields pass (api.py leaves
    transcript collections out then). ``expand``: None chooses by ``choose_expansion`` (on
    where it pays, off on a CPU); ``rerank`` None by ``choose_rerank``. ``all_copies``: every
    document, not each text once with its copies' paths (search/copies.py)."""
    from ..search.copies import merged_copies
    from ..search.keyword import add_snippets, is_name_lookup
    from ..store.llm_cache import open_cache
    from .model_defaults import choose_expansion, choose_rerank

    query_settings = index.config().other.get("query")
    expansion_choice = choose_expansion(expand, index.config_path, query_settings)
    expand = expansion_choice.expand
    rerank_choice = choose_rerank(rerank, index.config_path, query_settings)
    rerank = rerank_choice.rerank

    cache = open_cache(index.backend) if expand or rerank else None

    def keyword(text: str) -> SearchResult:
        if levels:
            return index.search_levels(
                text, collections=collections, limit=pool, full=full, where=where, **levels
            )
        return index.search(
            text,
            collections=collections,
            limit=pool,
            full=full,
            snippets=False,
            where=where,
            all_copies=all_copies,
        )

    def vectors(texts: Sequence[str]) -> VectorBatch:
        return _vector_batch(index, conn, texts, collections, pool, full, levels, where, all_copies)

    def expansion(query: str, intent: str | None) -> Any:
        from ..models.generate import expand_query
        from ..models.roles import lazy_role_model

        generator, missing = lazy_role_model("generate", index.config_path, cache)
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

    @functools.cache
    def rerank_model() -> tuple[Any, Notice | None]:
        # Asked twice a query (rerank_room, then reranking): the config, the file's hash, once.
        from ..models.roles import lazy_role_model

        return lazy_role_model("rerank", index.config_path, cache)

    def reranking(query: str, candidates: list[tuple[str, str]], first_rank: int) -> Any:
        from ..models.rerank import Reranked, rerank
        from ..models.roles import ModelLoadError

        scorer, missing = rerank_model()
        if scorer is None:
            return Reranked(scores=[(key, None) for key, _ in candidates], warnings=[missing])
        try:
            unreadable = _unreadable_share(scorer, query)
        except ModelLoadError as exc:
            from ..models.rerank import RERANK_FAILED

            failed = Notice(RERANK_FAILED, f"{exc}: results keep their fused order")
            return Reranked(scores=[(key, None) for key, _ in candidates], warnings=[failed])
        if unreadable > MAX_UNREADABLE:
            from ..models.rerank import RERANK_FAILED

            why = (
                f"the rerank model cannot read this query ({unreadable:.0%} {UNREADABLE_TOKENS}):"
                " results keep their fused order"
            )
            skipped = Notice(RERANK_FAILED, why)
            return Reranked(scores=[(key, None) for key, _ in candidates], warnings=[skipped])
        from .blend import fixed_ranks

        seconds = rerank_budget(budget)
        unmovable = {rank - first_rank for rank in fixed_ranks(len(candidates), first_rank)}
        return rerank(query, candidates, scorer, cache, budget=seconds, unmovable=unmovable)

    def rerank_room(count: int, first_rank: int) -> Notice | None:
        from ..models.rerank import budget_too_short

        scorer, _ = rerank_model()
        if scorer is None:
            return None  # reranking says why
        from .blend import fixed_ranks

        unmovable = len(fixed_ranks(count, first_rank))
        return budget_too_short(scorer.model_sha256, rerank_budget(budget), count, cache, unmovable)

    try:
        yield QuerySteps(
            keyword,
            vectors,
            lambda text: is_name_lookup(conn, text),
            lambda text, hits: add_snippets(conn, text, hits),
            expand=expansion if expand else None,
            expand_off=expansion_choice.why,
            passages=passages if rerank else None,
            rerank=reranking if rerank else None,
            rerank_room=rerank_room if rerank else None,
            rerank_off=rerank_choice.why,
            # A budget given with the query asks for reranking as much as --rerank does.
            rerank_quiet=rerank_choice.quiet and budget is None,
            copies=None if all_copies else (lambda hits: merged_copies(conn, hits)),
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
    """0 for a decoder (byte-level vocabulary: it reads anything) without loading it; a
    cross-encoder is loaded to read the query with its own tokenizer."""
    from ..models.cross_encoder import is_cross_encoder
    from ..models.roles import ModelLoadError

    path = getattr(scorer, "_path", None) or getattr(scorer, "path", None)
    if path is not None:
        try:
            if not is_cross_encoder(path):
                return 0.0
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"cannot load the rerank model {path}: {exc}") from exc
    share = getattr(scorer, "unreadable_share", None)
    return float(share(query)) if callable(share) else 0.0


def _vector_batch(
    index: SearchIndex,
    conn: Any,
    texts: Sequence[str],
    collections: Sequence[str],
    pool: int | None,
    full: bool,
    levels: dict[str, Any] | None = None,
    where: Sequence[str] = (),
    all_copies: bool = False,
) -> VectorBatch:
    """The vector side of `query`: each text without its exclusions is embedded (one batch), and
    the documents the exclusions rule out are dropped from its results."""
    from dataclasses import replace

    from ..search.keyword import excluded
    from ..search.query import without_exclusions
    from ..store.backend import documents as store

    plain = [without_exclusions(text, lambda name: store.option_defined(conn, name)) for text in texts]
    wanted = [i for i, text in enumerate(plain) if text.strip()]
    results: list[tuple[SearchResult, float] | None] = [None] * len(texts)
    if not wanted:
        return VectorBatch(results)
    request = None
    if levels:
        from ..config.selection import files_only
        from ..search.transcripts import turn_query

        if not files_only(index.config(), collections):
            asked = [levels.get(key) for key in ("level", "roles", "since", "until", "project")]
            request = turn_query(plain[wanted[0]], asked[0], asked[1] or (), *asked[2:], pool, 0.0, full)
    try:
        found = index.vector_search_texts(
            [plain[i] for i in wanted],
            collections,
            pool,
            0.0,
            full,
            False,
            levels=request,
            where=where,
            all_copies=all_copies,
        )
    except NoVectors as exc:
        why = f"{exc.message}; keyword results only ({exc.hint})"
        return VectorBatch(results, Notice("VECTORS_UNAVAILABLE", why))
    except ModelMissing as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return VectorBatch(results, Notice("MODEL_MISSING", f"{exc.message}; keyword results only{hint}"))
    except EndpointError as exc:
        # A slow or misbehaving model server costs the vector side only, as a failing expansion
        # or rerank endpoint costs its step: the keyword results are still an answer.
        hint = f" ({exc.hint})" if exc.hint else ""
        why = f"the embedding endpoint failed [{exc.code}]: {exc.message}; keyword results only{hint}"
        return VectorBatch(results, Notice("VECTORS_UNAVAILABLE", why))
    for i, result, unreadable in zip(wanted, found.results, found.unreadable_shares, strict=True):
        ruled_out = excluded(conn, texts[i], [(h.collection, h.path) for h in result.hits])
        if ruled_out:
            kept = tuple(h for h in result.hits if (h.collection, h.path) not in ruled_out)
            result = replace(result, hits=kept, total=max(result.total - len(ruled_out), len(kept)))
        results[i] = (result, unreadable)
    return VectorBatch(results, embed_seconds=found.embed_seconds)
