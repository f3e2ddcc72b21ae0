"""The keyword score a user sees: evidence against what the query asks for, in 0..1.

A BM25 sum grows with the number and rarity of a query's words, so the same sum is strong
evidence for a query of common words and weak for one of rare words; shown raw (as x / (1 + x)),
nearly every hit scored 0.85-0.98, a page lacking the query's rarest word among them, and
`--min-score` meant nothing. Each query therefore has a *reference*: the BM25 sum of a unit of
average length that holds every required term of the query once, in its body. A result scores

    s = r / (1 + r),  r = evidence / reference

so 0.5 is "as much as every query word once", a result lacking a rare word has lost that word's
share (a term found nowhere weighs the most), and 0.8 needs four times the reference (the words
repeated, in the title or headings, or a definition of the name). Each population (documents,
transcript turns) has its own reference over its own statistics, as its BM25 has, so a page and a
session that hold the query's words alike score alike: results of both kinds merge by score.
Dividing every candidate of one query by one reference keeps their order, so this changes no
ranking within a collection kind.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def reference(idfs: Iterable[float]) -> float:
    """The reference evidence of a query whose required terms have these IDFs. With the term once
    and the unit's length at the average, BM25's saturation (k1 + 1) f / (f + k1 (1 - b + b dl /
    avgdl)) is exactly 1 (in a column of weight 1), so each term adds its IDF."""
    return sum(idfs)


def relative(evidence: float, reference_evidence: float) -> float:
    """The score shown for ``evidence`` (a non-negative BM25 sum) against the query's reference."""
    if not math.isfinite(evidence):
        return 1.0
    ratio = max(0.0, evidence) / reference_evidence if reference_evidence > 0 else max(0.0, evidence)
    return ratio / (1.0 + ratio)


def evidence_of(score: float) -> float:
    """The inverse of :func:`relative` up to the reference: the ratio r behind a score s."""
    capped = min(max(score, 0.0), 0.999999)
    return capped / (1.0 - capped)
