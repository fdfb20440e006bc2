"""One Answer is one trace: an invoke_agent span and a child span per trace step.

The offline controller answers over the real embedded stack (the small
history of tests/support/conversation.py); spans go to the SDK's in-memory
exporter. Text reaches the spans only with the GenAI content-capture switch on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.memory import Memory
from memstrata.model import TraceStep
from memstrata.telemetry.genai import CAPTURE_ENV
from tests.support.conversation import ASKED_ON, MAYA, open_memory
from tests.unit.telemetry.conftest import Spans

QUESTION = "What is the name of my kitten?"
#: Attributes that carry text (the question, the answer, queries, tool arguments, notes).
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.retrieval.query.text",
           "gen_ai.tool.call.arguments", "memstrata.step.note")


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Memory]:
    m = open_memory(tmp_path_factory.mktemp("answer-spans"), embedder)
    yield m
    m.close()


def _answer(memory: Memory, seen: list[TraceStep] | None = None):
    controller = Controller(memory, ControllerSettings(policy="rules"))
    return controller.answer(MAYA, QUESTION, ASKED_ON,
                             on_step=seen.append if seen is not None else None)


def test_one_answer_yields_one_span_per_trace_step_under_its_answer_span(
        memory: Memory, spans: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    seen: list[TraceStep] = []
    answer = _answer(memory, seen)
    assert seen == answer.steps  # the caller's on_step still sees every step
    [root] = spans.named("invoke_agent memstrata.controller")
    steps = [s for s in spans.all() if s is not root]
    assert root.parent is None
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in steps)
    assert {s.context.trace_id for s in spans.all()} == {root.context.trace_id}
    # One span per step, in order, each as long as the step's own milliseconds.
    ordered = sorted(steps, key=lambda s: s.end_time)
    assert [(s.attributes["memstrata.step"], s.attributes["memstrata.step.tool"])
            for s in ordered] == [(st.step, st.tool) for st in answer.steps]
    for span, step in zip(ordered, answer.steps):
        assert span.end_time - span.start_time == pytest.approx(step.ms * 1e6, abs=1000)
        if step.layer is not None:
            assert span.attributes["memstrata.disclosure.layer"] == int(step.layer)
    # The GenAI operation names: retrieval for search, execute_tool for the other tools.
    ops = {s.attributes["memstrata.step.tool"]: s.attributes.get("gen_ai.operation.name")
           for s in steps}
    assert ops["search"] == "retrieval" and ops["read_raw"] == "execute_tool"
    assert ops["cues"] is None  # the controller's own step is no GenAI operation
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["memstrata.tenant_id"] == "acme"
    assert root.attributes["memstrata.disclosure.deepest_layer"] == int(
        answer.summary.deepest_layer)
    # The answer names its trace, and the user is on no span.
    assert answer.summary.trace_id == f"{root.context.trace_id:032x}"
    for span in spans.all():
        assert not [k for k in span.attributes if k in CONTENT], span.name
        assert "maya" not in {str(v) for v in span.attributes.values()}


def test_text_reaches_the_spans_only_with_the_content_switch_on(
        memory: Memory, spans: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "true")
    answer = _answer(memory)
    [root] = spans.named("invoke_agent memstrata.controller")
    assert QUESTION in root.attributes["gen_ai.input.messages"]
    assert answer.answer in root.attributes["gen_ai.output.messages"]
    [search] = spans.named("retrieval memstrata")
    assert "kitten" in search.attributes["gen_ai.retrieval.query.text"]
    assert "gen_ai.tool.call.arguments" in spans.named("execute_tool read_raw")[0].attributes


def test_without_tracing_the_answer_names_no_trace(memory: Memory) -> None:
    answer = _answer(memory)
    assert answer.summary.trace_id is None and answer.steps


def test_the_trace_id_crosses_the_wire() -> None:
    from memstrata.contract import TraceSummary
    from memstrata.rpc.answers import summary_from_wire, summary_to_wire

    tid = "0af7651916cd43dd8448eb211c80319c"
    assert summary_from_wire(summary_to_wire(TraceSummary(policy="rules", trace_id=tid))
                             ).trace_id == tid
    assert summary_from_wire(summary_to_wire(TraceSummary(policy="rules"))).trace_id is None
