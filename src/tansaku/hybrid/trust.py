"""How far fusion may trust each ranked list for a given query.

Plain RRF trusts every list alike. On Chinese man pages with an English-only embedder it fell
from keyword search's MRR 0.63 to 0.34 (issue 10): the embedder cannot read the query, and its
list is noise ranked as confidently as a good one. Its scores do not show it (cosine values and
their spread look like those of English queries), but its tokenizer does: MiniLM turns 文件 权限
into [UNK] tokens. So the vector list is weighed by the share of the query the embedder can read.
"""

from __future__ import annotations

# The weight of the original query's lists (expansions, later, weigh half).
ORIGINAL_WEIGHT = 2.0
# A query the embedder reads less of than this is not given to fusion as a vector list at all;
# between this and fully read, the weight falls with the unknown share.
MIN_READABLE = 0.5


# A short query that names something (os.path.join, --preserve-root, rsync) halves the vector
# list's weight: an embedding of a bare name knows little of it, keyword search with its
# definitions signal a lot. Measured with MiniLM (query MRR at factor 1 / 0.5): python-ids 0.907 /
# 0.939, py-src-ids 0.870 / 0.961 (keyword alone 0.944 and 0.963), man-pages 0.742 / 0.732,
# npm-ids 0.749 / 0.694; 0.25 and 0.4 gave no more on the first two and lost more on npm-ids.
NAME_LOOKUP_FACTOR = 0.5


def vector_weight(unknown_share: float, *, name_lookup: bool = False) -> tuple[float, str]:
    """(weight, reason) for the vector list of a query whose tokens are ``unknown_share`` unknown
    to the embedding model's vocabulary."""
    weight, reason = _readable_weight(unknown_share)
    if name_lookup and weight:
        return weight * NAME_LOOKUP_FACTOR, reason + "; a name lookup, which keyword search answers best"
    return weight, reason


def _readable_weight(unknown_share: float) -> tuple[float, str]:
    readable = 1.0 - unknown_share
    if unknown_share <= 0.0:
        return ORIGINAL_WEIGHT, "original query; the embedder knows every token of it"
    if readable < MIN_READABLE:
        return 0.0, (
            f"the embedder cannot read this query ({unknown_share:.0%} of its tokens are unknown to"
            " its vocabulary): vector results left out"
        )
    return (
        ORIGINAL_WEIGHT * readable,
        f"original query; {unknown_share:.0%} of its tokens are unknown to the embedder",
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
