"""Reciprocal Rank Fusion of ranked lists, with weights that say how far each list can be trusted.

Pure functions over document keys: no index, no model. Each list contributes
``weight / (k + rank)`` (rank from 1) to every document it ranks; a document first in any list
gains ``TOP_BONUS``, one at rank 2-3 ``NEAR_BONUS`` (the best such bonus counts once), scaled by
that list's weight against ``FULL_WEIGHT``: a list fusion distrusts cannot buy its top document a
place through the bonus either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

K = 60
TOP_BONUS = 0.05
NEAR_BONUS = 0.02
CANDIDATE_LIMIT = 40
# The weight of a list of the original query, at which the rank bonuses count in full.
FULL_WEIGHT = 2.0


@dataclass(frozen=True)
class RankedList:
    """One retrieval's documents, best first, with the weight fusion gives it and why."""

    name: str  # "keyword", "vector", ...
    keys: tuple[str, ...]  # document keys, best first, each once
    scores: tuple[float, ...]  # the list's own scores, same order
    weight: float
    reason: str = ""


@dataclass(frozen=True)
class Contribution:
    list_name: str
    rank: int  # 1-based
    score: float  # the list's own score
    rrf: float  # weight / (k + rank)


@dataclass(frozen=True)
class Fused:
    key: str
    score: float  # RRF sum plus bonus
    bonus: float
    contributions: tuple[Contribution, ...] = field(default_factory=tuple)


def fuse(lists: Sequence[RankedList], *, k: int = K, limit: int | None = CANDIDATE_LIMIT) -> list[Fused]:
    """The documents of every list, by fused score (ties: the earlier list's better rank first)."""
    parts: dict[str, list[Contribution]] = {}
    bonuses: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for list_index, ranked in enumerate(lists):
        if ranked.weight <= 0:
            continue
        trust = min(1.0, ranked.weight / FULL_WEIGHT)
        for rank, (key, score) in enumerate(zip(ranked.keys, ranked.scores, strict=True), start=1):
            contribution = Contribution(ranked.name, rank, score, ranked.weight / (k + rank))
            parts.setdefault(key, []).append(contribution)
            first_seen.setdefault(key, (rank, list_index))
            bonus = (TOP_BONUS if rank == 1 else NEAR_BONUS if rank <= 3 else 0.0) * trust
            bonuses[key] = max(bonuses.get(key, 0.0), bonus)
    fused = []
    for key, contributions in parts.items():
        total = sum(c.rrf for c in contributions) + bonuses[key]
        fused.append(Fused(key, total, bonuses[key], tuple(contributions)))
    fused.sort(key=lambda f: (-f.score, first_seen[f.key]))
    return fused if limit is None else fused[:limit]
