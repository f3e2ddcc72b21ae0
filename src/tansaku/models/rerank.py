"""Reranking candidates with a local yes/no relevance model (hybrid/blend.py mixes its scores
with the fused rank).

Scores are cached per (model file, prompt version, query, text), so re-running a query, or a
query whose candidates overlap an earlier one, scores only the new texts.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Collection
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
    "budget_too_short",
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
    unmovable: Collection[int] = (),
) -> Reranked:
    """A 0..1 relevance score per (id, text) candidate; never raises for a model problem.
    ``unmovable``: the candidates (0-based, in fused order) whose place no score can change (the
    caller knows how scores are used: hybrid/blend.fixed_ranks).

    Candidates are scored in the given order (best fused first; the unmovable ones last), a few
    per model call, for at most ``budget`` seconds of scoring (loading the model is not counted:
    it happens once per process, and a query whose scores are all cached never loads it): those
    not reached get None and a RERANK_PARTIAL warning, so the budget always buys the candidates
    most likely to matter. A budget that the model's known speed says covers fewer than two
    movable candidates buys none: one score cannot reorder them. Cached scores cost no time and
    are used wherever the candidate is. Without a scorer, or when scoring fails, every score is
    None (MODEL_MISSING, RERANK_SKIPPED).
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
        movable, fixed = _scoring_order(candidates, unmovable)
        waiting = [text for text in (*movable, *fixed) if text not in known]
        per_text = _known_speed(scorer.model_sha256, cache)  # seconds a text, 0 when unknown
        movable_waiting = sum(text not in known for text in movable)
        if not _can_reorder(budget, per_text, movable_waiting, len(movable) - movable_waiting):
            return _too_short(candidates, known, budget or 0.0, per_text)
        deadline = None
        if waiting:
            score_group = _group_scorer(scorer)  # loads a model that loads on first use
            started = time.perf_counter()
            deadline = None if budget is None else started + budget
        position = 0
        measured = 0.0
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
            measured = per_text = (time.perf_counter() - started) / position
            prompt_tokens += int(getattr(scorer, "last_prompt_tokens", 0) or 0)
    except Exception as exc:
        # A model failure costs the reranking only; the fused results are still good results.
        return _unavailable(
            candidates, RERANK_FAILED, f"reranking failed ({exc}): results keep their fused order"
        )
    if measured:
        _remember_speed(scorer.model_sha256, measured, cache)
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


def _scoring_order(
    candidates: list[tuple[str, str]], unmovable: Collection[int] = ()
) -> tuple[list[str], list[str]]:
    """The candidates' texts whose place a score can change, in fused order, and those it cannot
    (``unmovable``), scored last so a short budget buys only scores that count."""
    movable: dict[str, None] = {}
    fixed: dict[str, None] = {}
    for index, (_, text) in enumerate(candidates):
        (fixed if index in unmovable else movable).setdefault(text, None)
    return list(movable), [text for text in fixed if text not in movable]


def _too_short(
    candidates: list[tuple[str, str]], known: dict[str, float], budget: float, per_text: float
) -> Reranked:
    scored = sum(text in known for _, text in candidates)
    return Reranked(
        scores=[(cid, known.get(text)) for cid, text in candidates],
        warnings=[_too_short_notice(budget, per_text, scored, len(candidates))],
    )


def _too_short_notice(budget: float, per_text: float, scored: int, count: int) -> Notice:
    speed = f" at this model's {per_text:.2f} s a passage (measured earlier)" if per_text else ""
    needed = f" to {2 * per_text:.2g} s or more" if per_text else ""
    return Notice(
        RERANK_PARTIAL,
        f"the rerank budget ({budget:g} s) covers fewer than two passages{speed}, and one score"
        f" cannot change the order: {scored} of {count} candidates scored, the rest keep their"
        f" fused order (raise --rerank-budget{needed} to rerank)",
    )


def budget_too_short(
    model_sha256: str, budget: float | None, count: int, cache: LlmCache | None, unmovable: int = 0
) -> Notice | None:
    """RERANK_PARTIAL when the model's known speed says ``budget`` buys fewer than two scores
    that could move among ``count`` fused candidates, ``unmovable`` of which no score can move
    (one cannot reorder them), before any passage is chosen for it; None when it may (or its
    speed is not known yet)."""
    per_text = _known_speed(model_sha256, cache)
    movable = count - unmovable
    if budget is None or not per_text or _can_reorder(budget, per_text, movable):
        return None
    return _too_short_notice(budget, per_text, 0, count)


def _can_reorder(budget: float | None, per_text: float, waiting: int, scored: int = 0) -> bool:
    """Whether scoring what ``budget`` affords of ``waiting`` movable candidates, at ``per_text``
    seconds each (0: not known yet, so all of them), gives two or more scores with the ``scored``
    ones:
    one score among fused ranks cannot reorder them (the scored candidate goes before the
    unscored ones only where the blend already had it there). Nothing waiting: nothing to skip."""
    affordable = waiting if budget is None or not per_text else int(budget / per_text)
    return not waiting or scored + min(affordable, waiting) >= 2


# How fast each reranker was, in seconds a passage, and when that was measured (time.time()):
# what this process measured, else what the index recorded. A speed is trusted for
# SPEED_TRUSTED_FOR seconds, then measured again: a skip decided on one slow measurement (a busy
# machine) would otherwise never be revisited, since a skipped query measures nothing.
_SECONDS_PER_TEXT: dict[str, tuple[float, float]] = {}
SPEED_KIND = "rerank-speed"
SPEED_TRUSTED_FOR = 600


def _known_speed(model_sha256: str, cache: LlmCache | None) -> float:
    """Seconds a passage, 0 when not measured in the last SPEED_TRUSTED_FOR seconds."""
    for known in (_SECONDS_PER_TEXT.get(model_sha256), _stored_speed(model_sha256, cache)):
        if known is not None and 0 <= time.time() - known[1] <= SPEED_TRUSTED_FOR:
            return known[0]
    return 0.0


def _stored_speed(model_sha256: str, cache: LlmCache | None) -> tuple[float, float] | None:
    stored = cache.get(SPEED_KIND, cache_key(model_sha256)) if cache is not None else None
    if isinstance(stored, dict):
        seconds, at = stored.get("seconds"), stored.get("at")
        if isinstance(seconds, int | float) and isinstance(at, int | float) and seconds > 0:
            return float(seconds), float(at)
    return None


def _remember_speed(model_sha256: str, seconds: float, cache: LlmCache | None) -> None:
    now = time.time()
    _SECONDS_PER_TEXT[model_sha256] = (seconds, now)
    if cache is not None:
        cache.put(SPEED_KIND, cache_key(model_sha256), {"seconds": seconds, "at": now})


def _group_scorer(scorer: RelevanceScorer) -> Callable[[str, list[str]], list[float]]:
    batch = getattr(scorer, "score_batch", None)
    if callable(batch):
        return lambda query, texts: list(batch(query, texts))
    single = scorer.score
    return lambda query, texts: [single(query, text) for text in texts]
