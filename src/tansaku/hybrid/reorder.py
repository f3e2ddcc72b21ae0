"""The final order of `query`: rerank scores blended with the fused rank.

Pure: the fused order and the scores in, the order and scores out. A candidate the reranker
scored gets ``blend(rrf_rank, score)`` (blend.py): the fused rank weighs 0.75 in the top
three, 0.60 to ten, 0.40 after, so a weak reranker cannot push a strong hit out. A candidate
whose place no score can change (the first: ``fixed_ranks``) keeps it unscored, at the least the
blend could give it. Candidates the budget did not reach follow in their fused order, each scored
no higher than the one before it, so scores still fall down the list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .blend import blend, fixed_ranks


@dataclass(frozen=True)
class Placed:
    key: str
    score: float  # final, 0..1
    rrf_rank: int  # 1-based
    rerank: float | None  # None: not reranked
    blended: float | None


def reorder(
    fused_keys: Sequence[str], scores: Mapping[str, float | None], first_rank: int = 1
) -> list[Placed]:
    """``fused_keys`` best first, the first at fused rank ``first_rank``; ``scores`` the rerank
    score per key (None or absent: not reached)."""
    scored: list[Placed] = []
    waiting: list[tuple[str, int]] = []
    fixed = fixed_ranks(len(fused_keys), first_rank)
    for rank, key in enumerate(fused_keys, start=first_rank):
        score = scores.get(key)
        if score is None and rank in fixed:
            scored.append(Placed(key, blend(rank, 0.0), rank, None, None))
        elif score is None:
            waiting.append((key, rank))
        else:
            mixed = blend(rank, score)
            scored.append(Placed(key, mixed, rank, score, mixed))
    # Equal blends keep the fused order.
    scored.sort(key=lambda p: (-p.score, p.rrf_rank))
    placed = list(scored)
    ceiling = placed[-1].score if placed else 1.0
    for key, rank in waiting:
        ceiling = min(ceiling, blend(rank, 0.0))
        placed.append(Placed(key, ceiling, rank, None, None))
    return placed
