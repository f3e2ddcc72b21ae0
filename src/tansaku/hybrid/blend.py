"""How `query` mixes a reranker's scores with the fused order.

The fused rank counts more at the top, where fusion is surest; the reranker's 0..1 score decides
more further down. Placing candidates (hybrid/reorder.py) and choosing which ones are worth
scoring (the reranker scores those whose place a score can change first) both follow from it.
"""

from __future__ import annotations


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


def fixed_ranks(count: int, first: int = 1) -> frozenset[int]:
    """The fused ranks, among ``count`` candidates ranked from ``first``, whose place no rerank
    score can change: the least the blend gives the rank is at least the most it gives any rank
    below it, and its most at most the least of any rank above it (equal blends keep the fused
    order). Under ``blend_weight`` that is the first alone: 0.75 at worst, against at best 0.625
    for the second and 0.636 for the eleventh."""
    ranks = range(first, first + count)
    lows = [blend(rank, 0.0) for rank in ranks]
    highs = [blend(rank, 1.0) for rank in ranks]
    fixed = set()
    for i, rank in enumerate(ranks):
        below = max(highs[i + 1 :], default=float("-inf"))
        above = min(lows[:i], default=float("inf"))
        if lows[i] >= below and highs[i] <= above:
            fixed.add(rank)
    return frozenset(fixed)
