"""Answered precision and coverage in the ``eval qa`` report, and their paired comparison."""

from __future__ import annotations

import pytest

from memstrata.eval.metrics import paired_ratio_difference
from memstrata.eval.qa import QAResult, aggregate, answered, compare_rates, right

ABSTAIN = "Not mentioned in the conversation"


def result(i: int, category: str, prediction: str, f1: float, adversarial: bool = False,
           judge: bool | None = None) -> QAResult:
    return QAResult(qid=f"q{i}", user="u", category=category, question="?", gold="g",
                    prediction=prediction, abstained=prediction == ABSTAIN, f1=f1,
                    adversarial=adversarial, judge=judge)


def test_answered_and_right():
    assert answered(result(0, "single-hop", "Lisbon", 1.0))
    assert not answered(result(0, "single-hop", ABSTAIN, 0.0))
    assert not answered({"prediction": "x", "abstained": False, "error": "boom"})
    assert right(result(0, "single-hop", "Lisbon", 0.5))
    assert not right(result(0, "single-hop", "in Lisbon on a trip", 0.4))
    assert not right(result(0, "adversarial", "Lisbon", 0.0, adversarial=True))
    # the judge's verdict, where there is one, decides over F1
    assert right(result(0, "single-hop", "Lisboa", 0.0, judge=True))
    assert not right(result(0, "single-hop", "Lisbon", 1.0, judge=False))


def test_report_gives_precision_coverage_and_false_answers_by_category():
    rs = [result(0, "single-hop", "a", 1.0), result(1, "single-hop", "b", 0.0),
          result(2, "single-hop", ABSTAIN, 0.0), result(3, "single-hop", "c", 0.6),
          result(4, "adversarial", "d", 0.0, adversarial=True),
          result(5, "adversarial", ABSTAIN, 1.0, adversarial=True)]
    rep = aggregate(rs)
    single = rep["by_category"]["single-hop"]
    assert single["answered"] == 3 and single["right"] == 2
    assert single["precision"] == pytest.approx(2 / 3)
    assert single["coverage"] == pytest.approx(3 / 4)
    assert single["false_answers"] is None
    adv = rep["by_category"]["adversarial"]
    assert adv["precision"] == 0.0 and adv["coverage"] is None
    assert adv["false_answers"] == pytest.approx(1 / 2)
    # all questions: the answer to an unanswerable question counts as a wrong answer
    assert rep["overall_with_adversarial"]["precision"] == pytest.approx(2 / 4)
    assert rep["overall"]["precision"] == pytest.approx(2 / 3)


def test_compare_rates_pairs_by_question():
    cats = ["single-hop"] * 4
    old = [result(i, c, p, f).model_dump() for i, (c, p, f) in
           enumerate(zip(cats, ["a", "b", "c", "d"], [1.0, 0.0, 0.0, 1.0]))]
    # now: the two wrong answers abstain, the right ones stay
    new = [result(i, c, p, f).model_dump() for i, (c, p, f) in
           enumerate(zip(cats, ["a", ABSTAIN, ABSTAIN, "d"], [1.0, 0.0, 0.0, 1.0]))]
    out = compare_rates(list(reversed(new)), old)["single-hop"]
    assert out["precision"]["before"] == 0.5 and out["precision"]["now"] == 1.0
    assert out["precision"]["diff"] == pytest.approx(0.5)
    assert out["coverage"]["diff"] == pytest.approx(-0.5)
    assert out["coverage"]["lost"] == 2 and out["coverage"]["gained"] == 0
    assert out["precision"]["ci95_low"] <= 0.5 <= out["precision"]["ci95_high"]
    with pytest.raises(ValueError, match="questions differ"):
        compare_rates(new[:2], old)


def test_paired_ratio_difference_interval_and_empty_denominators():
    same = paired_ratio_difference([1, 0, 1], [1, 1, 1], [1, 0, 1], [1, 1, 1])
    assert same["diff"] == 0 and same["ci95_low"] == same["ci95_high"] == 0
    up = paired_ratio_difference([1] * 20, [1] * 20, [1] * 10 + [0] * 10, [1] * 20)
    assert up["diff"] == pytest.approx(0.5) and up["ci95_low"] > 0
    none = paired_ratio_difference([0, 0], [0, 0], [1, 0], [1, 1])
    assert none["diff"] is None
    with pytest.raises(ValueError, match="differ in length"):
        paired_ratio_difference([1], [1], [1, 1], [1, 1])
