"""The eval arithmetic on tiny cases whose expected numbers are worked out by hand in each test."""

from __future__ import annotations

import math

import pytest

from cairn.evals.metrics import (
    coverage_gains,
    coverage_ndcg_at_k,
    coverage_recall_at_k,
    coverage_reciprocal_rank,
    dcg,
    first_covering_rank,
    mean,
    ndcg_at_k,
    prf,
    recall_at_k,
    reciprocal_rank,
)


def test_prf_counts_and_rounding() -> None:
    # 2 right, 1 wrong, 3 missed: P = 2/3, R = 2/5, F1 = 2PR/(P+R) = (8/15)/(16/15) = 0.5
    assert prf(2, 1, 3) == {"precision": 0.6667, "recall": 0.4, "f1": 0.5, "tp": 2, "fp": 1, "fn": 3}


def test_prf_empty_cases_follow_the_convention() -> None:
    assert prf(0, 0, 0) == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 0, "fp": 0, "fn": 0}
    silent = prf(0, 0, 4)  # expected 4, said nothing: no wrong claim, but nothing found
    assert (silent["precision"], silent["recall"], silent["f1"]) == (1.0, 0.0, 0.0)
    chatty = prf(0, 3, 0)  # expected nothing, said 3 things: nothing missed, all wrong
    assert (chatty["precision"], chatty["recall"], chatty["f1"]) == (0.0, 1.0, 0.0)
    wrong = prf(0, 2, 2)
    assert (wrong["precision"], wrong["recall"], wrong["f1"]) == (0.0, 0.0, 0.0)


def test_prf_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        prf(1, -1, 0)


def test_mean() -> None:
    assert mean([1.0, 0.5, 0.0]) == 0.5
    assert mean(x for x in (0.25, 0.75)) == 0.5
    assert mean([]) == 0.0


def test_recall_at_k() -> None:
    ranked = [False, True, False, True]
    assert recall_at_k(ranked, 2, 1) == 0.0
    assert recall_at_k(ranked, 2, 2) == 0.5
    assert recall_at_k(ranked, 2, 10) == 1.0
    assert recall_at_k(ranked, 4, 10) == 0.5
    assert recall_at_k([True, True, True], 2, 3) == 1.0  # capped: duplicates cannot exceed everything
    assert recall_at_k([], 0, 5) == 1.0
    with pytest.raises(ValueError):
        recall_at_k(ranked, 2, 0)


def test_reciprocal_rank() -> None:
    assert reciprocal_rank([True, False]) == 1.0
    assert reciprocal_rank([False, False, True]) == pytest.approx(1 / 3)
    assert reciprocal_rank([False, False]) == 0.0
    assert reciprocal_rank([]) == 0.0


def test_ndcg_at_k_binary() -> None:
    # [0, 1, 1] with 2 relevant: DCG = 1/log2(3) + 1/log2(4); ideal = 1/log2(2) + 1/log2(3).
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k([False, True, True], 2, 10) == pytest.approx(expected)
    assert expected == pytest.approx(0.6934, abs=1e-4)
    assert ndcg_at_k([True, True, False], 2, 10) == 1.0
    # Only the top 2 count: [0, 1] against an ideal of min(2, k) = 2 gains.
    assert ndcg_at_k([False, True, True], 2, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    # 3 relevant, only 1 found at rank 1: 1 / (1 + 1/log2(3) + 1/log2(4)) = 1 / 2.1309...
    assert ndcg_at_k([True, False, False], 3, 10) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))
    assert ndcg_at_k([False, False], 1, 10) == 0.0
    assert ndcg_at_k([], 0, 10) == 1.0


def test_dcg() -> None:
    assert dcg([1, 0, 1]) == pytest.approx(1 + 0.5)  # rank 3 divides by log2(4) = 2
    assert dcg([]) == 0.0


COVERED = [{"line:9"}, set(), {"idea:i3", "line:14"}, {"line:14"}, {"idea:i9"}]
TARGETS = {"idea:i3", "line:14", "line:40"}


def test_coverage_gains_count_only_new_targets() -> None:
    # rank 1 covers a non-target, rank 3 two new targets, rank 4 a duplicate, rank 5 a non-target.
    assert coverage_gains(COVERED, TARGETS) == [0, 0, 2, 0, 0]


def test_coverage_recall_at_k() -> None:
    assert coverage_recall_at_k(COVERED, TARGETS, 1) == 0.0
    assert coverage_recall_at_k(COVERED, TARGETS, 3) == pytest.approx(2 / 3)
    assert coverage_recall_at_k(COVERED, TARGETS, 10) == pytest.approx(2 / 3)
    assert coverage_recall_at_k([], TARGETS, 10) == 0.0
    assert coverage_recall_at_k(COVERED, set(), 10) == 1.0


def test_first_covering_rank_and_reciprocal_rank() -> None:
    assert first_covering_rank(COVERED, TARGETS) == 3
    assert coverage_reciprocal_rank(COVERED, TARGETS) == pytest.approx(1 / 3)
    assert first_covering_rank(COVERED, {"line:99"}) is None
    assert coverage_reciprocal_rank(COVERED, {"line:99"}) == 0.0


def test_coverage_ndcg_uses_graded_new_target_gains() -> None:
    # Gains [0, 0, 2, 0, 0]: DCG = 2/log2(4) = 1; ideal for 3 targets = 1 + 1/log2(3) + 1/log2(4).
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert coverage_ndcg_at_k(COVERED, TARGETS, 10) == pytest.approx(1 / ideal)
    # Cut at k = 2 nothing is covered yet.
    assert coverage_ndcg_at_k(COVERED, TARGETS, 2) == 0.0
    # One result covering both of 2 targets at rank 1 is a perfect ranking: 2 / (1 + 1/log2(3)) capped at 1.
    assert coverage_ndcg_at_k([{"idea:i3", "line:14"}], {"idea:i3", "line:14"}, 10) == 1.0
    # The same result at rank 2: 2/log2(3) / (1 + 1/log2(3)).
    both_second = coverage_ndcg_at_k([set(), {"idea:i3", "line:14"}], {"idea:i3", "line:14"}, 10)
    assert both_second == pytest.approx((2 / math.log2(3)) / (1 + 1 / math.log2(3)))
