"""Reranking candidates with a local yes/no relevance model, and blending with the fused rank.

Scores are cached per (model file, prompt version, query, text), so re-running a query, or a
query whose candidates overlap an earlier one, scores only the new texts.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..store.llm_cache import LlmCache, cache_key
from ..types import Notice

__all__ = [
    "RERANK_FAILED",
    "RERANK_PARTIAL",
    "RERANK_UNAVAILABLE",
    "RelevanceScorer",
    "Reranked",
    "blend",
    "rerank",
]

# The stable warning codes of issue 10: no model is MODEL_MISSING; a model that failed
# RERANK_SKIPPED; a time budget that ran out before the last candidate RERANK_PARTIAL.
RERANK_UNAVAILABLE = "MODEL_MISSING"
RERANK_FAILED = "RERANK_SKIPPED"
RERANK_PARTIAL = "RERANK_PARTIAL"
CACHE_KIND = "rerank"
# Candidates scored per model call: small enough that the budget is checked often.
BATCH = 4


class RelevanceScorer(Protocol):
    """What reranking needs of a model: see ``tansaku.models.llama.LlamaYesNoScorer``."""

    prompt_version: int

    @property
    def model_sha256(self) -> str: ...

    def score(self, query: str, document: str) -> float: ...


@dataclass(frozen=True)
class Reranked:
    """Scores in the candidates' order; None for a candidate the budget did not reach, and for
    all when reranking was unavailable or failed."""

    scores: list[tuple[str, float | None]]
    warnings: list[Notice] = field(default_factory=list)
    computed: int = 0  # texts scored by the model in this call (the rest came from the cache)
    prompt_tokens: int = 0  # tokens the model read for them, for throughput figures
    seconds: float = 0.0  # time spent in the model

    @property
    def available(self) -> bool:
        return all(score is not None for _, score in self.scores)

    @property
    def reached(self) -> int:
        return sum(score is not None for _, score in self.scores)


def _unavailable(candidates: list[tuple[str, str]], code: str, message: str) -> Reranked:
    return Reranked(scores=[(cid, None) for cid, _ in candidates], warnings=[Notice(code, message)])


def rerank(
    query: str,
    candidates: list[tuple[str, str]],
    scorer: RelevanceScorer | None,
    cache: LlmCache | None,
    *,
    budget: float | None = None,
) -> Reranked:
    """A 0..1 relevance score per (id, text) candidate; never raises for a model problem.

    Candidates are scored in the given order (best fused first), a few per model call, for at
    most ``budget`` seconds of scoring (loading the model is not counted: it happens once per
    process, and a query whose scores are all cached never loads it): those not reached get None
    and a RERANK_PARTIAL warning, so the budget always buys the candidates most likely to matter.
    Cached scores cost no time and are used wherever the candidate is. Without a scorer, or
    when scoring fails, every score is None (MODEL_MISSING, RERANK_SKIPPED).
    """
    if scorer is None:
        return _unavailable(
            candidates, RERANK_UNAVAILABLE, "no rerank model is available: results keep their fused order"
        )
    started = time.perf_counter()
    prompt_tokens = 0
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
        waiting = [text for text in keys if text not in known]
        deadline = None
        if waiting:
            score_group = _group_scorer(scorer)  # loads a model that loads on first use
            started = time.perf_counter()
            deadline = None if budget is None else started + budget
        position = 0
        per_text = 0.0  # seconds per text so far: a group starts only if it should end in time
        while position < len(waiting):
            size = BATCH
            if deadline is not None:
                room = deadline - time.perf_counter()
                if room <= 0 or (per_text and room < per_text):
                    break
                if per_text:
                    size = max(1, min(BATCH, int(room / per_text)))
                elif position == 0:
                    size = 1  # the first text measures the model's speed
            group = waiting[position : position + size]
            for text, score in zip(group, score_group(query, group), strict=True):
                fresh[text] = min(1.0, max(0.0, float(score)))
            position += len(group)
            per_text = (time.perf_counter() - started) / position if position else 0.0
            prompt_tokens += int(getattr(scorer, "last_prompt_tokens", 0) or 0)
    except Exception as exc:
        # A model failure costs the reranking only; the fused results are still good results.
        return _unavailable(
            candidates, RERANK_FAILED, f"reranking failed ({exc}): results keep their fused order"
        )
    if cache is not None and fresh:
        cache.put_many(CACHE_KIND, [(keys[text], score) for text, score in fresh.items()])
    known.update(fresh)
    scores = [(cid, known.get(text)) for cid, text in candidates]
    warnings = []
    missed = sum(score is None for _, score in scores)
    if missed:
        warnings.append(
            Notice(
                RERANK_PARTIAL,
                f"the rerank budget ran out after {len(scores) - missed} of {len(scores)} candidates:"
                " the rest keep their fused order (raise --rerank-budget to rerank more)",
            )
        )
    return Reranked(
        scores=scores,
        warnings=warnings,
        computed=len(fresh),
        prompt_tokens=prompt_tokens,
        seconds=time.perf_counter() - started,
    )


def _group_scorer(scorer: RelevanceScorer) -> Callable[[str, list[str]], list[float]]:
    batch = getattr(scorer, "score_batch", None)
    if callable(batch):
        return lambda query, texts: list(batch(query, texts))
    single = scorer.score
    return lambda query, texts: [single(query, text) for text in texts]


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
