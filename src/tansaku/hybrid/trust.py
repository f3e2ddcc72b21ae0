"""How far fusion may trust each ranked list for a given query.

Plain RRF trusts every list alike. On Chinese man pages with an English-only embedder it fell
from keyword search's MRR 0.63 to 0.34 (issue 10): the embedder cannot read the query, and its
list is noise ranked as confidently as a good one. Its scores do not show it (cosine values and
their spread look like those of English queries), but its tokenizer does: MiniLM turns 文件 权限
into [UNK] tokens, and where its vocabulary has the characters, its declared languages (English)
say it never learnt them (models/languages.py). So the vector list is weighed by the share of the
query the embedder can read.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models.languages import MIN_READABLE, UNREADABLE_TOKENS
from ..search.score_scale import evidence_of

# The weight of the original query's lists (expansions, later, weigh half).
ORIGINAL_WEIGHT = 2.0
# A query the embedder reads less of than MIN_READABLE is not given to fusion as a vector list at
# all; between that and fully read, the weight falls with the unreadable share.


# A short query that names something (os.path.join, --preserve-root, rsync) halves the vector
# list's weight when keyword search is sure of its answer: an embedding of a bare name knows
# little of it, keyword search with its definitions signal a lot. When keyword search is unsure
# (its first two scores nearly equal: several pages mention the name, none defines it), the
# vectors keep their weight. Measured with MiniLM on 254-token windows (query MRR, halving
# always / only when sure): python-ids 0.921 / 0.921, py-src-ids 0.961 / 0.935, npm-ids 0.715 /
# 0.803, man-pages 0.778 / 0.819, with the peak rule below.
NAME_LOOKUP_FACTOR = 0.5
# Keyword search is sure when its second document scores at most this share below its first,
# in raw BM25 (scores are |x| / (1 + |x|), which hides gaps near 1), or when its first document
# defines the name (pipeline._first_defines). Measured with MiniLM (query-fused MRR@10, "the only
# one of its results that defines it" / "its first defines it"): py-src-api 0.831 / 0.893, every
# other set unchanged once the word beside an option names the command (man-pages fell 0.819 ->
# 0.799 before: find -mtime, where tar(1) defines --mtime too and came first).
SURE_KEYWORD_GAP = 0.2
# A vector list whose first result stands out (cosine gap to the second, relative to the first)
# weighs more: 1 + PEAK_GAIN x gap. Measured (mean query MRR over the 7 sets): without 0.822,
# gain 2 0.831, gain 4 0.835; 2 is kept, as the smaller claim.
PEAK_GAIN = 2.0


def keyword_confidence(scores: Sequence[float]) -> float:
    """1 - evidence(second) / evidence(first): 0 when the first two tie, 1 when only one document
    matched. Both share the query's reference, so the ratio is that of their raw BM25 sums."""
    if len(scores) < 2:
        return 1.0 if scores else 0.0
    raw_first, raw_second = (evidence_of(s) for s in scores[:2])
    return 1.0 - raw_second / raw_first if raw_first > 0 else 0.0


def vector_peak(scores: Sequence[float]) -> float:
    """How far the first cosine stands above the second, relative to the first (0..1)."""
    if len(scores) < 2 or scores[0] <= 0:
        return 0.0
    return max(0.0, (scores[0] - scores[1]) / scores[0])


def vector_weight(
    unreadable_share: float,
    *,
    name_lookup: bool = False,
    keyword_sure: bool = True,
    peak: float = 0.0,
    sure_reason: str = "",
) -> tuple[float, str]:
    """(weight, reason) for a vector list: by the share of the text its embedder can read
    (``unreadable_share`` of its tokens it cannot read: models/languages.py), by how far its first result
    stands out (``peak``), and halved for a name lookup that keyword search is sure of."""
    weight, reason = _readable_weight(unreadable_share)
    if weight and peak > 0:
        weight *= 1 + PEAK_GAIN * peak
        reason += f"; its first result stands {peak:.0%} above the second (x{1 + PEAK_GAIN * peak:.2f})"
    if name_lookup and keyword_sure and weight:
        return weight * NAME_LOOKUP_FACTOR, reason + "; a name lookup keyword search is sure of" + sure_reason
    return weight, reason


def _readable_weight(unreadable_share: float) -> tuple[float, str]:
    readable = 1.0 - unreadable_share
    if unreadable_share <= 0.0:
        return ORIGINAL_WEIGHT, "original query; the embedder knows every token of it"
    if readable < MIN_READABLE:
        return 0.0, (
            f"the embedder cannot read this query ({unreadable_share:.0%} {UNREADABLE_TOKENS}):"
            " vector results left out"
        )
    return (
        ORIGINAL_WEIGHT * readable,
        f"original query; the embedder cannot read {unreadable_share:.0%} of its tokens",
    )


# The keyword list's weight falls with the square of the share of the query's terms its best
# document contains. A question whose words the best keyword match mostly lacks (a paraphrase, a
# how-to in other words) is where keyword search guesses: measured on man-pages and npm-docs with
# MiniLM, exponent 2 lifted query MRR from 0.719 to 0.742 and 0.744 to 0.778 (exponent 1: 0.735
# and 0.777), and left exact names and pasted errors, whose best match has every term, unchanged.
# A boost for the vector list on long queries was tried too and lost on pasted errors.
COVERAGE_POWER = 2.0


def keyword_weight(coverage: float = 1.0) -> tuple[float, str]:
    """The keyword list's weight, by the share of the query's terms its best document has."""
    if coverage >= 1.0:
        return ORIGINAL_WEIGHT, "original query; its best match has every term"
    return (
        ORIGINAL_WEIGHT * coverage**COVERAGE_POWER,
        f"original query; its best match has {coverage:.0%} of the terms",
    )
