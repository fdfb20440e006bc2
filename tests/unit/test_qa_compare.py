"""``eval qa --previous``: F1 differences per category, paired by question."""

from __future__ import annotations

import pytest

from memstrata.eval.qa import compare_runs


def rows(f1s: list[float], cats: list[str]) -> list[dict]:
    return [{"qid": f"q{i}", "category": c, "f1": f, "adversarial": c == "adversarial"}
            for i, (f, c) in enumerate(zip(f1s, cats))]


def test_pairs_by_question_and_splits_by_category():
    cats = ["single-hop", "single-hop", "temporal", "adversarial"]
    old = rows([0.0, 1.0, 0.5, 1.0], cats)
    new = list(reversed(rows([1.0, 1.0, 0.5, 0.0], cats)))  # order does not matter
    out = compare_runs(new, old)
    assert out["single-hop"]["diff"] == pytest.approx(0.5)
    assert out["single-hop"]["better"] == 1 and out["single-hop"]["worse"] == 0
    assert out["temporal"]["diff"] == 0
    assert out["adversarial"]["worse"] == 1
    assert out["overall (no adversarial)"]["questions"] == 3
    assert out["overall (all)"]["questions"] == 4


def test_other_questions_are_refused():
    with pytest.raises(ValueError, match="questions differ"):
        compare_runs(rows([1.0], ["temporal"]), rows([1.0, 0.0], ["temporal"] * 2))
