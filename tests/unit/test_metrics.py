"""Retrieval metrics on a tiny hand-made ranking with known answers."""

import math

import pytest

from memstrata.eval.metrics import (
    covered_recall_at_k,
    mean,
    ndcg_at_k,
    paired_difference,
    recall_at_k,
)

RANKED = ["s3", "s1", "s7", "s2", "s9"]
GOLD = {"s1", "s2"}


def test_recall_at_k():
    assert recall_at_k(RANKED, GOLD, 1) == 0.0
    assert recall_at_k(RANKED, GOLD, 2) == 0.5
    assert recall_at_k(RANKED, GOLD, 5) == 1.0
    assert recall_at_k(RANKED, set(), 5) is None


def test_ndcg_at_k_known_value():
    # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert math.isclose(ndcg_at_k(RANKED, GOLD, 5), expected)
    assert ndcg_at_k(["s1", "s2"], GOLD, 5) == 1.0
    assert ndcg_at_k(["x"], GOLD, 5) == 0.0
    # only one gold item fits in k=1, so the ideal is 1
    assert ndcg_at_k(["s1"], GOLD, 1) == 1.0


def test_covered_recall_counts_messages_inside_turns():
    turns = [["D1:1", "D1:2"], ["D2:5", "D2:6"], ["D3:1"]]
    assert covered_recall_at_k(turns, {"D1:2", "D3:1"}, 1) == 0.5
    assert covered_recall_at_k(turns, {"D1:2", "D3:1"}, 3) == 1.0


def test_mean_skips_undefined():
    assert mean([1.0, None, 0.0]) == 0.5
    assert mean([None]) is None


def test_paired_difference_counts_and_brackets_the_mean():
    ours = [1.0, 1.0, 0.5, 0.0, 1.0]
    theirs = [0.0, 1.0, 0.5, 1.0, 0.0]
    d = paired_difference(ours, theirs, resamples=500)
    assert d["diff"] == pytest.approx(0.2)
    assert (d["better"], d["worse"], d["questions"]) == (2, 1, 5)
    assert d["ci95_low"] <= d["diff"] <= d["ci95_high"]
    assert d["ci95_low"] < 0 < d["ci95_high"]  # five questions prove nothing
    same = paired_difference([1.0] * 50, [0.0] * 50)
    assert same["ci95_low"] == same["ci95_high"] == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1.0], [])
