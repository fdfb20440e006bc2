"""LoCoMo-style F1/EM, abstention, aggregation of QA runs and the depth plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.eval.qa import (
    QAResult,
    aggregate,
    exact_match,
    multi_f1,
    normalize_answer,
    plot_depth,
    score,
    token_f1,
)
from memstrata.synth.answer import is_abstention


def test_normalisation_drops_case_punctuation_and_articles():
    assert normalize_answer("The Lean Startup!") == "lean startup"
    assert normalize_answer("  An apple, a pear and   THE plum.") == "apple pear plum"
    assert normalize_answer("“Charlotte’s Web”") == "charlottes web"


def test_token_f1_and_exact_match():
    assert token_f1("7 May 2023", "7 May 2023") == 1.0
    assert token_f1("the 7th of May", "7 May 2023") == pytest.approx(1 / 3)  # only "may"
    assert token_f1("Sweden", "Norway") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0
    assert exact_match("The Wolves.", "the wolves") == 1.0
    assert exact_match("Wolves team", "The Wolves") == 0.0


def test_scores_follow_the_locomo_categories():
    # multi-hop: each gold item takes its best predicted item
    assert multi_f1("pottery, camping", "pottery, camping, painting, swimming") == 0.5
    assert score("camping, pottery", "pottery, camping", "multi-hop")[0] == 1.0
    # open-domain: only the part before ";" is gold
    assert score("Likely no", "Likely no; she wants to be a counselor", "open-domain") == (
        1.0, 1.0)
    # adversarial: abstaining is right, anything else is wrong
    assert score("Not mentioned in the conversation", "self-care", "adversarial") == (1.0, 1.0)
    assert score("self-care is important", "self-care is important", "adversarial",
                 adversarial=True) == (0.0, 0.0)
    assert score("2022", "2022", "temporal") == (1.0, 1.0)


@pytest.mark.parametrize(("text", "abstains"), [
    ("Not mentioned in the conversation", True),
    ("There is no information available about that.", True),
    ("The conversation does not mention it", True),
    ("It does not say.", True),
    ("Pixel", False),
    ("Not sure, maybe Pixel", False),
])
def test_abstention(text: str, abstains: bool):
    assert is_abstention(text) is abstains


def _result(cat: str, f1: float, depths: dict[str, int], adversarial: bool = False,
            **summary: float) -> QAResult:
    return QAResult(qid=cat + str(f1), user="u", category=cat, question="q", gold="g",
                    prediction="p", f1=f1, em=float(f1 == 1.0), adversarial=adversarial,
                    gold_sessions=["s1"], source_sessions=["s1"],
                    summary={"drill_depths": depths, "sessions_drilled": len(depths),
                             "haystack_sessions": 10, "drilled_share": len(depths) / 10,
                             "steps": summary.get("steps", 4), "ms_total": 50.0,
                             "ms_memory": 30.0, "ms_llm": 0.0,
                             "tokens": {"memory": {"tokens_in": 0, "tokens_out": 400,
                                                   "estimated": True}},
                             "stop_reason": "sufficient"})


def test_aggregate_reports_quality_depth_and_selectivity(tmp_path: Path):
    results = [
        _result("single-hop", 1.0, {"s1": 1, "s2": 1, "s3": 3}),
        _result("single-hop", 0.5, {"s1": 2}),
        _result("temporal", 0.0, {"s4": 1}, steps=8),
        _result("adversarial", 1.0, {}, adversarial=True),
        QAResult(qid="x", user="u", category="temporal", question="q", gold="g",
                 prediction="", error="LLMError: down"),
    ]
    r = aggregate(results)
    assert r["questions"] == 5 and r["errors"] == 1
    assert r["overall"]["n"] == 3 and r["overall"]["f1"] == pytest.approx(0.5)
    assert r["overall_with_adversarial"]["f1"] == pytest.approx(2.5 / 4)
    assert r["by_category"]["single-hop"]["f1"] == pytest.approx(0.75)
    assert r["by_category"]["single-hop"]["em"] == pytest.approx(0.5)
    assert r["drills"] == 5
    assert r["depth_distribution"] == {"L1": 0.6, "L2": 0.2, "L3": 0.2}
    assert r["depth_by_category"]["temporal"] == {"L1": 1.0, "L2": 0.0, "L3": 0.0}
    assert r["mean_sessions_drilled"] == pytest.approx(5 / 4)
    assert r["mean_drilled_share"] == pytest.approx(0.125)
    assert r["mean_steps"] == pytest.approx(5.0)
    assert r["mean_tokens"]["memory"] == {"tokens_in": 0.0, "tokens_out": 400.0,
                                          "estimated": True}
    assert r["overhead_ms"]["p50"] == pytest.approx(20.0)
    assert r["by_category"]["single-hop"]["judge_accuracy"] is None

    png = plot_depth(r, tmp_path / "out" / "depth.png", "test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
