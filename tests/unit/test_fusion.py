"""The fusion rules of the hybrid retriever, one at a time, on hand-computed numbers."""

import math

import pytest

from memstrata.retrieval.fusion import (
    best_per_session,
    keyword_boost,
    keyword_matches,
    max_fuse,
    rrf,
    tokens,
    top_k,
)


def test_rrf_sums_reciprocal_ranks_with_k():
    scores = rrf({"lex": ["a", "b"], "dense": ["b", "c"]}, k=60)
    assert math.isclose(scores["a"], 1 / 61)
    assert math.isclose(scores["b"], 1 / 62 + 1 / 61)
    assert math.isclose(scores["c"], 1 / 62)
    # b is in both lists, so it must win
    assert max(scores, key=scores.get) == "b"


def test_rrf_weights_and_zero_weight_ranking_ignored():
    scores = rrf({"lex": ["a"], "dense": ["b"]}, k=1, weights={"lex": 0.5, "dense": 0.0})
    assert scores == {"a": 0.25}


def test_rrf_duplicate_counts_once_at_best_rank():
    assert rrf({"lex": ["a", "a"]}, k=60) == {"a": 1 / 61}


def test_rrf_rejects_non_positive_k():
    with pytest.raises(ValueError, match="k must be positive"):
        rrf({"lex": ["a"]}, k=0)


def test_session_scores_are_best_unit():
    sessions, members = best_per_session(
        {"u1": 0.2, "u2": 0.5, "u3": 0.1, "orphan": 9.0},
        {"u1": "s1", "u2": "s1", "u3": "s2"},
    )
    assert sessions == {"s1": 0.5, "s2": 0.1}
    assert members == {"s1": ["u2", "u1"], "s2": ["u3"]}


def test_keyword_boost_uses_top_score_and_caps_matches():
    boosted = keyword_boost({"s1": 1.0, "s2": 0.5, "s3": 0.2}, {"s2": 1, "s3": 10},
                            alpha=0.1, max_matches=3)
    assert math.isclose(boosted["s1"], 1.0)
    assert math.isclose(boosted["s2"], 0.5 + 0.1 * 1.0 * 1)
    assert math.isclose(boosted["s3"], 0.2 + 0.1 * 1.0 * 3)
    assert keyword_boost({}, {"x": 1}) == {}


def test_keyword_boost_can_reorder_sessions():
    boosted = keyword_boost({"s1": 0.03, "s2": 0.029}, {"s2": 1}, alpha=0.1)
    assert top_k(boosted, 1)[0][0] == "s2"


def test_max_fuse_keeps_best_score_per_session():
    assert max_fuse([{"a": 0.1, "b": 0.4}, {"a": 0.3}, {}]) == {"a": 0.3, "b": 0.4}


def test_top_k_orders_by_score_then_id():
    assert top_k({"b": 1.0, "a": 1.0, "c": 2.0}, 2) == [("c", 2.0), ("a", 1.0)]
    assert top_k({"a": 1.0}, 0) == []


def test_keyword_matches_whole_phrases_only():
    q = tokens("When did Caroline go to the LGBTQ support group?")
    assert keyword_matches(q, ["LGBTQ support group", "Caroline", "caroline", "group support",
                               "sup"]) == 2
    assert keyword_matches([], ["x"]) == 0
