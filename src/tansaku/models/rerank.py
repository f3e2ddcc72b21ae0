"""Reranking candidates with a local yes/no relevance model, and blending with the fused rank.

Scores are cached per (model file, prompt version, query, text), so re-running a query, or a
query whose candidates overlap an earlier one, scores only the new texts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from ..store.llm_cache import LlmCache, cache_key
from ..types import Notice

__all__ = ["RERANK_FAILED", "RERANK_UNAVAILABLE", "RelevanceScorer", "Reranked", "blend", "rerank"]

RERANK_UNAVAILABLE = "RERANK_UNAVAILABLE"
RERANK_FAILED = "RERANK_FAILED"
CACHE_KIND = "rerank"


class RelevanceScorer(Protocol):
    """What reranking needs of a model: see ``tansaku.models.llama.LlamaYesNoScorer``."""

    prompt_version: int

    @property
    def model_sha256(self) -> str: ...

    def score(self, query: str, document: str) -> float: ...


@dataclass(frozen=True)
class Reranked:
    """Scores in the candidates' order; all None when reranking was unavailable or failed."""

    scores: list[tuple[str, float | None]]
    warnings: list[Notice] = field(default_factory=list)
    computed: int = 0  # texts scored by the model in this call (the rest came from the cache)

    @property
    def available(self) -> bool:
        return all(score is not None for _, score in self.scores)


def _unavailable(candidates: list[tuple[str, str]], code: str, message: str) -> Reranked:
    return Reranked(scores=[(cid, None) for cid, _ in candidates], warnings=[Notice(code, message)])


def rerank(
    query: str, candidates: list[tuple[str, str]], scorer: RelevanceScorer | None, cache: LlmCache | None
) -> Reranked:
    """A 0..1 relevance score per (id, text) candidate; never raises for a model problem.

    Without a scorer, or when scoring fails, every score is None with RERANK_UNAVAILABLE or
    RERANK_FAILED: the caller keeps its fused order rather than a half-reranked one.
    """
    if scorer is None:
        return _unavailable(
            candidates, RERANK_UNAVAILABLE, "no rerank model is available: results keep their fused order"
        )
    try:
        prefix = (scorer.model_sha256, str(scorer.prompt_version), query)
        keys = {
            text: cache_key(*prefix, hashlib.sha256(text.encode("utf-8")).hexdigest())
            for _, text in candidates
        }
        known: dict[str, float] = {}
        if cache is not None:
            hits = cache.get_many(CACHE_KIND, list(keys.values()))
            known = {
                text: float(hits[key]) for text, key in keys.items() if isinstance(hits.get(key), int | float)
            }
        fresh: dict[str, float] = {}
        for text in keys:
            if text not in known:
                fresh[text] = min(1.0, max(0.0, float(scorer.score(query, text))))
    except Exception as exc:
        # A model failure costs the reranking only; the fused results are still good results.
        return _unavailable(
            candidates, RERANK_FAILED, f"reranking failed ({exc}): results keep their fused order"
        )
    if cache is not None and fresh:
        cache.put_many(CACHE_KIND, [(keys[text], score) for text, score in fresh.items()])
    known.update(fresh)
    return Reranked(scores=[(cid, known[text]) for cid, text in candidates], computed=len(fresh))


def blend_weight(rrf_rank: int) -> float:
    """How much the fused rank counts against the rerank score: more at the top, where fusion is surest."""
    if rrf_rank < 1:
        raise ValueError("rrf_rank is 1-based")
    if rrf_rank <= 3:
        return 0.75
    if rrf_rank <= 10:
        return 0.60
    return 0.40


def blend(rrf_rank: int, rerank_score: float) -> float:
    """w * (1 / rrf_rank) + (1 - w) * rerank_score, with w from ``blend_weight``."""
    weight = blend_weight(rrf_rank)
    return weight * (1.0 / rrf_rank) + (1.0 - weight) * rerank_score
