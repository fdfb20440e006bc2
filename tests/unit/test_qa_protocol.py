"""The QA protocol's pieces: BLEU-1, iteration percentiles, the error split, judge rules,
the full-context cut, baseline names, and plots that are optional."""

from __future__ import annotations

import math
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.eval.baselines import BaselineSettings, full_context, parse_baselines
from memstrata.eval.bleu import bleu1, score_bleu1
from memstrata.eval.errors import error_kind, error_split
from memstrata.eval.judge import judge_type
from memstrata.eval.judge_prompts import JUDGE_TYPES, RULES, judge_messages
from memstrata.eval.protocol import annotate, extend_report, percentiles, side_by_side
from memstrata.eval.qa import QAResult, aggregate
from memstrata.model import Message, Scope, Session, SessionMeta, Turn

# -- BLEU-1 -------------------------------------------------------------------------------------


def test_bleu1_is_clipped_unigram_precision_times_the_brevity_penalty():
    assert bleu1("Pixel", "Pixel") == 1.0
    # Shorter than the gold answer: every word right, penalised for brevity.
    assert bleu1("cat sat", "cat sat on mat") == pytest.approx(math.exp(1 - 4 / 2))
    # A repeated word counts only as often as the gold answer has it.
    assert bleu1("cat cat cat", "cat") == pytest.approx(1 / 3)
    # Longer than the gold answer: no penalty, precision only.
    assert bleu1("a grey kitten named Pixel", "Pixel") == pytest.approx(1 / 4)
    assert bleu1("Sweden", "Norway") == 0.0
    assert bleu1("", "Norway") == 0.0 and bleu1("", "") == 1.0


def test_bleu1_uses_the_f1_normalisation_and_category_rules():
    assert bleu1("The Wolves!", "wolves") == 1.0  # case, punctuation and articles go
    assert bleu1("Porto", "Porto; a city in Portugal") < 1.0
    assert score_bleu1("Porto", "Porto; a city in Portugal", "open-domain") == 1.0
    assert score_bleu1("Not mentioned in the conversation", "Berlin", "adversarial") == 1.0
    assert score_bleu1("Berlin", "Berlin", "single-hop", adversarial=True) == 0.0


def test_bleu_and_f1_differ_where_word_order_and_length_differ():
    from memstrata.eval.qa import token_f1

    # F1 rewards recall; BLEU-1 does not, and punishes the short answer instead.
    assert token_f1("Berlin", "Berlin Germany") == pytest.approx(2 / 3)
    assert bleu1("Berlin", "Berlin Germany") == pytest.approx(math.exp(-1))


# -- percentiles ---------------------------------------------------------------------------------


def test_iteration_percentiles_use_the_nearest_rank():
    values = list(range(1, 101))
    p = percentiles(values)
    assert p["p50"] == 50.5 and p["p95"] == 95 and p["p99"] == 99 and p["max"] == 100
    assert percentiles([]) == {"p50": None, "p95": None, "p99": None, "mean": None, "max": None}
    assert percentiles([3.0])["p99"] == 3.0


# -- error split -------------------------------------------------------------------------------


def _result(qid: str, prediction: str, gold: str = "Berlin", *, f1: float | None = None,
            gold_sessions: tuple[str, ...] = ("session_2",), drilled: tuple[str, ...] = (),
            cited: tuple[str, ...] = (), category: str = "single-hop", steps: int = 3,
            adversarial: bool = False, judge: bool | None = None,
            error: str | None = None) -> QAResult:
    from memstrata.eval.qa import score

    f, em = score(prediction, gold, category, adversarial)
    return QAResult(qid=qid, user="u", category=category, question="q?", gold=gold,
                    prediction=prediction, adversarial=adversarial,
                    f1=f if f1 is None else f1, em=em, judge=judge,
                    gold_sessions=list(gold_sessions), source_sessions=list(cited),
                    summary={"drill_depths": {s: 3 for s in drilled}, "steps": steps},
                    error=error)


def test_a_wrong_answer_is_a_retrieval_error_when_gold_evidence_was_not_read():
    right = _result("a", "Berlin", drilled=("session_2",))
    missed = _result("b", "Paris", drilled=("session_1",))
    misread = _result("c", "Paris", drilled=("session_2",))
    cited_only = _result("d", "Paris", cited=("session_2",))  # read through a cited line
    partial = _result("e", "Paris", gold_sessions=("session_1", "session_2"),
                      drilled=("session_1",))
    no_gold = _result("f", "Paris", gold_sessions=())
    abstained = _result("g", "Not mentioned in the conversation", drilled=("session_2",))
    adversarial = _result("h", "Berlin", category="adversarial", adversarial=True)
    failed = _result("i", "", error="LLMError: down")
    judged_wrong = _result("j", "Berlin", drilled=("session_2",), judge=False)
    assert [error_kind(r) for r in (right, missed, misread, cited_only, partial, no_gold,
                                    abstained, adversarial, failed, judged_wrong)] == [
        "right", "retrieval", "generation", "generation", "retrieval", "unknown",
        "generation", None, None, "generation"]
    split = error_split([right, missed, misread, partial, no_gold, adversarial, failed])
    assert split["questions"] == 5
    assert (split["right"], split["retrieval"], split["generation"], split["unknown"]) == (
        1, 2, 1, 1)
    assert split["retrieval_partial"] == 1
    assert split["retrieval_share"] == pytest.approx(2 / 3)
    # The same rule on results read back from JSON.
    assert error_kind(missed.model_dump(mode="json")) == "retrieval"


def test_extend_report_adds_bleu_iterations_and_split_and_rows_line_up():
    results = [_result("a", "Berlin", drilled=("session_2",), steps=2),
               _result("b", "Berlin Germany", gold="Berlin", drilled=("session_2",), steps=4),
               _result("c", "Paris", drilled=("session_1",), steps=12),
               _result("d", "Not mentioned", category="adversarial", adversarial=True,
                       steps=1)]
    report = extend_report(aggregate(results), results)
    assert report["overall"]["bleu1"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert report["overall_with_adversarial"]["bleu1"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert report["by_category"]["adversarial"]["bleu1"] == 1.0
    assert report["iterations"]["p50"] == 3.0 and report["iterations"]["max"] == 12
    assert report["error_split"]["retrieval"] == 1
    rows = side_by_side(report, {"full-context": report})
    assert [r["system"] for r in rows] == ["system", "full-context"]
    assert rows[0]["bleu1"] == report["overall"]["bleu1"]
    assert rows[0]["iterations_p50"] == 3.0 and rows[0]["retrieval_errors"] == 1
    dumped = annotate([r.model_dump(mode="json") for r in results])
    assert [d["error_kind"] for d in dumped] == ["right", "right", "retrieval", None]
    assert dumped[1]["bleu1"] == 0.5


# -- judge -----------------------------------------------------------------------------------------


def test_every_longmemeval_type_has_its_own_judge_rule():
    types = [t for t in JUDGE_TYPES if t != "default"]
    assert len(types) == 7
    assert len({RULES[t] for t in JUDGE_TYPES}) == len(JUDGE_TYPES)  # no two alike
    for t in types:
        assert judge_type(t) == t
        msg = judge_messages("Q?", "gold", "resp", t)[-1]["content"]
        assert msg.startswith(RULES[t]) and "Response: resp" in msg
    assert "Rubric: gold" in judge_messages("Q?", "gold", "r", "single-session-preference")[
        -1]["content"]
    assert "Explanation: gold" in judge_messages("Q?", "gold", "r", "abstention")[-1]["content"]
    # LoCoMo categories map onto them; an unanswerable question always gets "abstention".
    assert judge_type("multi-hop") == "multi-session"
    assert judge_type("temporal") == "temporal-reasoning"
    assert judge_type("single-hop") == "default" and judge_type("open-domain") == "default"
    assert judge_type("knowledge-update", adversarial=True) == "abstention"
    with pytest.raises(ValueError, match="judge type: 'other'"):
        judge_messages("Q?", "g", "r", "other")


# -- baselines' inputs ------------------------------------------------------------------------------


def _session(sid: str, day: int, n: int) -> Session:
    scope = Scope(tenant_id="t", user_id="u")
    turns = [Turn(index=i, messages=[Message(role="user", content=f"{sid} turn {i} " + "x" * 40)])
             for i in range(1, n + 1)]
    return Session(meta=SessionMeta(scope=scope, session_id=sid,
                                    session_date=datetime(2024, 1, day)), turns=turns)


def test_full_context_keeps_the_latest_turns_within_the_budget_in_date_order():
    sessions = [_session("s1", 1, 4), _session("s2", 2, 4), _session("s3", 3, 4)]
    whole = full_context(sessions, 100_000)
    assert whole.session_ids == ["s1", "s2", "s3"] and not whole.truncated
    budget = whole.tokens // 2
    cut = full_context(sessions, budget)
    assert cut.truncated and cut.tokens <= budget
    assert cut.session_ids[-1] == "s3" and "s1" not in cut.session_ids
    first_meta, first_turns = cut.sessions[0]
    # The partly kept session keeps its latest turns, in order.
    assert [t.index for t in first_turns] == list(range(5 - len(first_turns), 5))
    assert cut.text().index("s2") < cut.text().index("s3")


def test_baseline_names_and_settings_are_checked():
    assert parse_baselines("rag-l3, full-context,rag-l3") == ["rag-l3", "full-context"]
    assert parse_baselines(None) == [] and parse_baselines("") == []
    with pytest.raises(ValueError, match="unknown baseline 'bm25'"):
        parse_baselines("full-context,bm25")
    with pytest.raises(ValueError, match="rag_turns"):
        BaselineSettings(rag_turns=0)
    with pytest.raises(ValueError, match="context_tokens"):
        BaselineSettings(context_tokens=10)


# -- plots are optional -------------------------------------------------------------------------------


def test_write_plot_without_matplotlib_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]):
    from memstrata.cli.eval_cmd import write_plot
    from memstrata.eval.qa import plot_depth

    report: dict[str, Any] = {"depth_distribution": {"L1": 1.0, "L2": 0.0, "L3": 0.0},
                              "depth_by_category": {}, "drills": 1}
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    assert write_plot(plot_depth, report, tmp_path / "d.png", "t") is False
    assert "pip install 'memstrata[eval]'" in capsys.readouterr().err
    assert not (tmp_path / "d.png").exists()

    def broken(*_: object) -> None:
        raise ImportError("No module named 'somethingelse'")

    with pytest.raises(ImportError, match="somethingelse"):  # other import errors surface
        write_plot(broken)


# -- the bench command's own parts -------------------------------------------------------------------


def test_bench_options_are_checked_and_limit_keeps_only_the_questions_haystacks(
        capsys: pytest.CaptureFixture[str]):
    from bench.qa_protocol import parse_args, restrict
    from memstrata.eval.datasets import load_dataset

    base = ["--base-url", "http://127.0.0.1:1/v1", "--model", "m"]
    for bad, named in ((["--rag-turns", "0"], "rag_turns"), (["--limit", "0"], "--limit"),
                       (["--baselines", "oracle"], "unknown baseline 'oracle'"),
                       (["--price-in", "-1"], "--price-in")):
        with pytest.raises(SystemExit) as exc:
            parse_args(base + bad)
        assert exc.value.code == 2 and named in capsys.readouterr().err
    args = parse_args(base)
    assert args.baseline_names == ["full-context", "rag-l3"] and args.judge_model is None
    root = Path(__file__).resolve().parents[2]
    data = load_dataset(root / "tests/fixtures/longmemeval_mini.json", "longmemeval")
    every = len(data.parsed.sessions)
    kept = restrict(data, 2)
    assert [q.qid for q in kept.questions] == ["lme-mini-001", "lme-mini-002"]
    assert {s.scope.user_id for s in kept.parsed.sessions} == {"lme-mini-001", "lme-mini-002"}
    assert 0 < len(kept.parsed.sessions) < every


def test_bench_table_has_one_row_per_system_and_one_per_question_type():
    from bench.qa_protocol import MAIN_COLUMNS, markdown

    results = [_result("a", "Berlin", drilled=("session_2",), judge=True),
               _result("b", "Paris", drilled=("session_1",), category="multi-hop",
                       judge=False)]
    report = extend_report(aggregate(results), results)
    doc = {"config": {"dataset": "x/lme.json", "questions": 2, "model": "m",
                      "judge_model": "j"},
           "comparison": side_by_side(report, {"rag-l3": report}),
           "accuracy_by_type": {"system": {"single-hop": 1.0, "multi-hop": 0.0},
                                "rag-l3": {"single-hop": 1.0, "multi-hop": None}}}
    text = markdown(doc)
    lines = text.splitlines()
    header = next(ln for ln in lines if ln.startswith("| system |"))
    assert header.count("|") == len(MAIN_COLUMNS) + 1
    assert any(ln.startswith("| rag-l3 | 2 | 0.500 |") for ln in lines)
    assert "| multi-hop | 0.000 | - |" in text and "| 1 / 0 | 2 | 0 | 0 |" in text
