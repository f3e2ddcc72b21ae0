"""Metric maths against hand-computed examples."""

from __future__ import annotations

import math

import pytest

from tansaku.eval import metrics

RANKED = ["x", "b", "y", "a", "z"]
RELEVANT = ["a", "b"]  # "a" is the primary answer (grade 2), "b" grade 1


def test_first_relevant_rank_and_hits():
    assert metrics.first_relevant_rank(RANKED, RELEVANT, 10) == 2
    assert metrics.hit_at(RANKED, RELEVANT, 1) == 0.0
    assert metrics.hit_at(RANKED, RELEVANT, 2) == 1.0
    assert metrics.first_relevant_rank(RANKED, ["q"], 10) is None
    assert metrics.first_relevant_rank(RANKED, RELEVANT, 1) is None


def test_reciprocal_rank():
    assert metrics.reciprocal_rank(RANKED, RELEVANT) == 0.5
    assert metrics.reciprocal_rank(["a"], RELEVANT) == 1.0
    assert metrics.reciprocal_rank(RANKED, ["z"], k=4) == 0.0  # z is at rank 5, outside k
    assert metrics.reciprocal_rank([], RELEVANT) == 0.0


def test_ndcg_by_hand():
    # b (gain 1) at rank 2, a (gain 3) at rank 4:
    # DCG = 1/log2(3) + 3/log2(5); ideal = 3/log2(2) + 1/log2(3)
    dcg = 1 / math.log2(3) + 3 / math.log2(5)
    ideal = 3 / 1 + 1 / math.log2(3)
    assert metrics.ndcg_at(RANKED, RELEVANT) == pytest.approx(dcg / ideal)
    assert metrics.ndcg_at(RANKED, RELEVANT) == pytest.approx(0.5296, abs=1e-4)  # 1.9229 / 3.6309


def test_ndcg_perfect_and_empty():
    assert metrics.ndcg_at(["a", "b"], RELEVANT) == pytest.approx(1.0)
    assert metrics.ndcg_at(["b", "a"], RELEVANT) < 1.0
    assert metrics.ndcg_at(["x"], RELEVANT) == 0.0
    assert metrics.ndcg_at(["a"], []) == 0.0


def test_ndcg_counts_a_repeated_document_once():
    assert metrics.ndcg_at(["a", "a", "b"], RELEVANT) == pytest.approx(
        (3 + 1 / math.log2(4)) / (3 + 1 / math.log2(3))
    )


def test_ndcg_cut_at_k():
    assert metrics.ndcg_at(RANKED, RELEVANT, k=3) == pytest.approx(
        (1 / math.log2(3)) / (3 + 1 / math.log2(3))
    )


def test_percentile_interpolates_like_numpy():
    values = [10.0, 20.0, 30.0, 40.0]
    assert metrics.percentile(values, 50) == 25.0
    assert metrics.percentile(values, 95) == pytest.approx(38.5)
    assert metrics.percentile(values, 0) == 10.0
    assert metrics.percentile(values, 100) == 40.0
    assert metrics.percentile([7.0], 95) == 7.0
    assert metrics.percentile([], 50) == 0.0


def test_mean():
    assert metrics.mean([1.0, 0.0, 0.5]) == 0.5
    assert metrics.mean([]) == 0.0


def test_paired_difference_of_a_constant_shift_has_no_spread():
    mean, low, high = metrics.paired_difference([1.0, 0.5, 0.25], [0.9, 0.4, 0.15])
    assert (mean, low, high) == pytest.approx((0.1, 0.1, 0.1))


def test_paired_difference_interval_holds_the_mean_and_widens_with_disagreement():
    better = [1.0] * 10 + [0.5] * 10
    worse = [0.5] * 10 + [1.0] * 10  # the same mean, queries swapped: no difference to find
    mean, low, high = metrics.paired_difference(better, worse)
    assert mean == 0.0
    assert low < 0.0 < high
    assert high - low > 0.2  # twenty queries that each move by 0.5 cannot pin the mean to 0.02


def test_paired_difference_is_repeatable_and_checks_the_pairing():
    a, b = [1.0, 0.0, 0.5, 0.33, 1.0], [0.5, 0.5, 0.5, 1.0, 0.25]
    assert metrics.paired_difference(a, b, seed=3) == metrics.paired_difference(a, b, seed=3)
    assert metrics.paired_difference([], []) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="same queries"):
        metrics.paired_difference([1.0], [1.0, 0.5])
