"""The offline controller (rule policy, extractive notes and answer) on the real embedded stack.

A small hand-written history (tests/support/conversation.py) is ingested for
real; each question must be answered from the right session, and its trace
must show how deep the controller went to find it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.memory import Memory
from memstrata.model import Layer, Scope
from tests.support.conversation import ASKED_ON, MAYA, open_memory

READS = ("read_facts", "read_turns", "read_raw")


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder):
    m = open_memory(tmp_path_factory.mktemp("offline"), embedder)
    yield m
    m.close()


def controller(memory: Memory, **switches: object) -> Controller:
    return Controller(memory, ControllerSettings(policy="rules", **switches))  # type: ignore[arg-type]


def reads_of(answer, session_id: str) -> list[tuple[str, Layer | None]]:
    return [(s.tool, s.layer) for s in answer.steps
            if s.tool in READS and session_id in s.sessions]


def test_date_question_stops_at_key_facts(memory: Memory):
    a = controller(memory).answer(MAYA, "When did I start training for a half marathon?", ASKED_ON)
    assert a.mode == "offline-extractive"
    # "last week", kept relative to the day it was said (Wednesday 2024-04-10).
    assert a.answer == "the week before 10 April 2024"
    assert a.sources[0].session_id == "s2-running"
    assert a.sources[0].session_date == datetime(2024, 4, 10, 18, 0)
    assert a.sources[0].turn_index == 1
    s = a.summary
    assert s.stop_reason == "sufficient"
    assert s.drill_depths["s2-running"] == Layer.L1  # the key facts were enough
    assert s.deepest_layer == Layer.L1
    assert reads_of(a, "s2-running") == [("read_facts", Layer.L1)]
    assert s.llm_calls == 0 and s.cost_usd == 0.0
    assert s.haystack_sessions == 4
    assert s.drilled_share == pytest.approx(s.sessions_drilled / 4)
    assert s.tokens["memory"].estimated and s.tokens["memory"].tokens_out > 0


def test_exact_detail_descends_to_raw_turns_of_the_right_session(memory: Memory):
    a = controller(memory).answer(MAYA, "What is the name of my kitten?", ASKED_ON)
    assert a.answer == "Pixel"
    assert a.sources[0].session_id == "s3-back-home"
    assert a.sources[0].layer == Layer.L3 and a.sources[0].turn_index == 2
    # L1 first (auto-drill), then L2, then only the most relevant raw turns.
    assert reads_of(a, "s3-back-home")[:3] == [
        ("read_facts", Layer.L1), ("read_turns", Layer.L2), ("read_raw", Layer.L3)]
    assert a.summary.drill_depths["s3-back-home"] == Layer.L3
    raw = next(s for s in a.steps if s.tool == "read_raw" and "s3-back-home" in s.sessions)
    assert raw.tokens_out > 0 and raw.ms >= 0


def test_place_answer_and_trace_bookkeeping(memory: Memory):
    a = controller(memory).answer(MAYA, "Where did I get promoted?", ASKED_ON)
    assert a.answer == "Orbit Labs"
    assert a.sources[0].session_id == "s4-work"
    steps = [s.step for s in a.steps]
    assert steps == sorted(steps)  # recorded in order
    assert a.steps[0].tool == "cues" and a.steps[-1].tool == "answer"
    assert a.summary.steps == max(s.step for s in a.steps if s.tool in
                                  ("search", "reflect", *READS, "interpret_dates", "decompose"))
    assert "## Relevant facts" in (a.notes or "")


def test_relative_dates_are_interpreted_against_the_question_date(memory: Memory):
    a = controller(memory).answer(MAYA, "Where did I get promoted this week?",
                                  datetime(2024, 6, 5, 9, 0))
    step = next(s for s in a.steps if s.tool == "interpret_dates")
    assert "this week = the week of 2024-06-03" in (step.note or "")
    assert a.answer == "Orbit Labs"


def test_compound_questions_are_decomposed(memory: Memory):
    a = controller(memory).answer(
        MAYA, "Where did I get promoted and when did I get back from Lisbon?", ASKED_ON)
    step = next(s for s in a.steps if s.tool == "decompose")
    assert "Where did I get promoted?" in (step.note or "")
    searched = next(s for s in a.steps if s.tool == "search")
    assert len(searched.arguments["queries"]) >= 3  # question, keywords, sub-questions
    assert {"s3-back-home", "s4-work"} <= set(a.summary.drill_depths)


def test_budgets_are_respected(memory: Memory):
    a = controller(memory, max_steps=2).answer(MAYA, "What is the name of my kitten?", ASKED_ON)
    assert a.summary.steps == 2 and a.summary.stop_reason == "budget"
    a = controller(memory, max_drilled_sessions=1, auto_drill=3).answer(
        MAYA, "What is the name of my kitten?", ASKED_ON)
    assert a.summary.sessions_drilled == 1
    a = controller(memory, max_raw_turns=1).answer(MAYA, "What is the name of my kitten?",
                                                   ASKED_ON)
    assert sum(1 for s in a.steps if s.tool == "read_raw" and not (s.note or "").startswith(
        "error")) <= 1


def test_ablations_change_what_is_read(memory: Memory):
    q = "What is the name of my kitten?"
    no_l1 = controller(memory, use_l1=False).answer(MAYA, q, ASKED_ON)
    assert not any(s.tool == "read_facts" for s in no_l1.steps)
    assert Layer.L1 not in no_l1.summary.drill_depths.values()
    assert no_l1.summary.ablations == ["l1"]

    no_raw = controller(memory, use_l3=False).answer(MAYA, q, ASKED_ON)
    assert not any(s.tool == "read_raw" for s in no_raw.steps)
    assert no_raw.summary.deepest_layer == Layer.L2

    plain = controller(memory, use_controller=False).answer(MAYA, q, ASKED_ON)
    assert plain.summary.policy == "top-k"
    assert [s.tool for s in plain.steps if s.tool in ("reflect", "decompose")] == []
    assert set(plain.summary.drill_depths.values()) == {Layer.L3}  # top sessions, every layer
    assert plain.summary.sessions_drilled == 3

    no_reflect = controller(memory, use_reflect=False).answer(MAYA, q, ASKED_ON)
    assert not any(s.tool == "reflect" for s in no_reflect.steps)

    no_notes = controller(memory, use_notes=False).answer(MAYA, q, ASKED_ON)
    assert no_notes.notes is None and no_notes.answer == "Pixel"


def test_unknown_user_abstains_without_reading(memory: Memory):
    a = controller(memory).answer(Scope(tenant_id="acme", user_id="nobody"),
                                  "What is the name of my kitten?", ASKED_ON)
    assert a.abstained and a.sources == []
    assert a.summary.stop_reason == "no-memory" and a.summary.haystack_sessions == 0


def test_controller_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                       memory: Memory, tmp_path: Path):
    from memstrata.controller.config import load_controller_settings

    monkeypatch.setenv("MEMSTRATA_CONTROLLER_MAX_STEPS", "7")
    monkeypatch.setenv("MEMSTRATA_CONTROLLER_USE_REFLECT", "false")
    s = load_controller_settings()
    assert s.max_steps == 7 and not s.use_reflect and s.ablations == ["reflect"]
    assert s.without(["l3", "no-draft"]).ablations == ["l3", "reflect", "draft"]
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {"m": {"input_per_mtok": 1, "output_per_mtok": 2}}}')
    monkeypatch.setenv("MEMSTRATA_CONTROLLER_PRICE_TABLE", str(prices))
    assert load_controller_settings().prices().price_for("m") is not None
