"""The fusion rules of the hybrid retriever, one at a time, on hand-computed numbers."""

import math

import pytest

from memstrata.retrieval.fusion import (
    blend_sessions,
    date_boost,
    best_per_session,
    coverage,
    coverage_weights,
    dbsf,
    keyword_boost,
    keyword_matches,
    max_fuse,
    rrf,
    tokens,
    top_k,
    weighted_sum,
)
from memstrata.text.terms import content_stems, stems


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


def test_dbsf_maps_mean_plus_minus_three_sigma_onto_0_1():
    # scores 1, 2, 3: mean 2, population sd sqrt(2/3); range 2 -+ 3 sd
    sd = math.sqrt(2 / 3)
    norm = dbsf([("a", 3.0), ("b", 2.0), ("c", 1.0)])
    assert math.isclose(norm["b"], 0.5)
    assert math.isclose(norm["a"], (3 - (2 - 3 * sd)) / (6 * sd))
    assert math.isclose(norm["a"] + norm["c"], 1.0)
    assert norm["a"] > norm["b"] > norm["c"] > 0


def test_dbsf_clips_outliers_and_handles_flat_and_empty_lists():
    norm = dbsf([("top", 100.0)] + [(f"u{i}", 1.0) for i in range(20)])
    assert norm["top"] == 1.0 and all(0.0 <= v < 0.5 for k, v in norm.items() if k != "top")
    assert dbsf([("a", 0.4), ("b", 0.4)]) == {"a": 1.0, "b": 1.0}
    assert dbsf([]) == {}
    assert dbsf([("a", 1.0), ("a", 3.0), ("b", 2.0)])["a"] == dbsf([("a", 3.0), ("b", 2.0),
                                                                     ("a", 1.0)])["a"]


def test_weighted_sum_gives_missing_ids_nothing():
    fused = weighted_sum({"lexical": {"a": 1.0, "b": 0.5}, "dense": {"b": 1.0, "c": 0.2}},
                         {"lexical": 0.7, "dense": 0.3})
    assert math.isclose(fused["a"], 0.7)
    assert math.isclose(fused["b"], 0.35 + 0.3)
    assert math.isclose(fused["c"], 0.06)


def test_coverage_is_the_share_of_query_terms_held():
    assert coverage({"paris", "jon"}, {"jon", "paris", "went"}) == 1.0
    assert coverage({"countri", "travel", "differ"}, {"differ", "place"}) == 1 / 3
    assert coverage(set(), {"x"}) == 1.0
    assert coverage({"x"}, set()) == 0.0


def test_coverage_weights_move_weight_to_dense_as_coverage_drops():
    full = coverage_weights(0.3, 1.0)
    assert math.isclose(full["lexical"], 0.7) and math.isclose(full["dense"], 0.3)
    half = coverage_weights(0.3, 0.5)
    assert math.isclose(half["lexical"], 0.35) and math.isclose(half["dense"], 0.65)
    assert coverage_weights(0.3, 0.0) == {"lexical": 0.0, "dense": 1.0}
    assert coverage_weights(0.5, 7.0) == {"lexical": 0.5, "dense": 0.5}  # clipped
    with pytest.raises(ValueError, match="dense_weight"):
        coverage_weights(1.5, 1.0)


def test_query_and_unit_terms_meet_through_the_index_stemmer():
    q = content_stems("How many different countries have I traveled to?")
    assert q == {"differ", "countri", "travel"}
    assert q <= stems("Travelling to different countries: she travels a lot.")


def test_blend_sessions_mixes_a_whole_session_ranking_on_the_same_scale():
    units = {"s1": 2.0, "s2": 1.0}
    whole = {"s2": 1.0, "s3": 0.5}  # normalised session-level BM25
    out = blend_sessions(units, whole, 0.5)
    assert math.isclose(out["s1"], 1.0)  # 0.5 * 2.0, nothing from the session list
    assert math.isclose(out["s2"], 0.5 * 1.0 + 0.5 * 2.0 * 1.0)  # s_max = 2.0
    assert math.isclose(out["s3"], 0.5 * 2.0 * 0.5)  # found by the session list only
    assert blend_sessions(units, whole, 0.0) == units
    assert blend_sessions(units, {}, 0.7) == units
    with pytest.raises(ValueError, match="session weight"):
        blend_sessions(units, whole, 1.5)


def test_date_boost_lifts_only_the_fitting_sessions():
    out = date_boost({"a": 1.0, "b": 0.8}, {"b", "zzz"}, 0.5)
    assert out == {"a": 1.0, "b": pytest.approx(0.8 + 0.5 * 1.0)}
    assert date_boost({"a": 1.0}, {"a"}, 0.0) == {"a": 1.0}
    assert date_boost({}, {"a"}, 0.5) == {}
