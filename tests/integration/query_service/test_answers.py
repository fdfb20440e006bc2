"""Answer and AnswerStream over gRPC: the library's answer, its trace, and the metrics."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memstrata.client import MemoryClient
from memstrata.controller.config import ControllerSettings
from memstrata.contract import Answer
from memstrata.controller.run import Controller
from memstrata.model import Layer, TraceStep
from tests.integration.query_service.conftest import Service
from tests.support.conversation import ASKED_ON, MAYA


@pytest.fixture(scope="module")
def client(service: Service):
    with MemoryClient(service.address, api_key=service.keys.acme) as c:
        yield c


def local(service: Service, question: str, **switches: object) -> Answer:
    return Controller(service.memory, ControllerSettings(policy="rules", **switches)).answer(
        MAYA, question, ASKED_ON)


def test_answer_equals_the_library_answer(service: Service, client: MemoryClient):
    q = "What is the name of my kitten?"
    remote, mine = client.answer(MAYA, q, ASKED_ON), local(service, q)
    assert remote.answer == mine.answer == "Pixel"
    assert remote.sources == mine.sources
    assert remote.sources[0].session_id == "s3-back-home" and remote.sources[0].source_ids == []
    assert remote.summary.deepest_layer == Layer.L3
    assert remote.summary.drill_depths == mine.summary.drill_depths
    assert remote.summary.tokens == mine.summary.tokens
    assert (remote.summary.steps, remote.summary.haystack_sessions) == (mine.summary.steps, 4)
    assert [s.tool for s in remote.steps] == [s.tool for s in mine.steps]
    assert remote.mode == "offline-extractive"


def test_answer_options_bound_depth_and_steps(client: MemoryClient):
    shallow = client.answer(MAYA, "What is the name of my kitten?", ASKED_ON, max_depth=1)
    assert shallow.summary.deepest_layer is not None
    assert shallow.summary.deepest_layer <= Layer.L1
    assert "l2" in shallow.summary.ablations and "l3" in shallow.summary.ablations
    notes_off = client.answer(MAYA, "Where did I get promoted?", ASKED_ON, without=["notes"])
    assert "notes" in notes_off.summary.ablations


def test_answer_stream_sends_each_step_then_the_answer(service: Service, client: MemoryClient):
    q = "When did I start training for a half marathon?"
    events = list(client.answer_stream(MAYA, q, ASKED_ON))
    steps = [e for e in events if isinstance(e, TraceStep)]
    assert isinstance(events[-1], Answer) and all(isinstance(e, TraceStep) for e in events[:-1])
    final = events[-1]
    assert final.answer == local(service, q).answer == "the week before 10 April 2024"
    assert steps == final.steps  # every recorded step was streamed, in order
    assert steps[0].tool == "cues" and steps[-1].tool == "answer"


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_metrics_count_depth_tokens_and_cost(service: Service, client: MemoryClient):
    url = service.metrics_url
    before = _samples(url)
    questions = ["What is the name of my kitten?", "Where did I get promoted?",
                 "When did I start training for a half marathon?"]
    answers = [client.answer(MAYA, q, ASKED_ON) for q in questions]
    after = _samples(url)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("memstrata_answer_depth_count") == 3
    for layer in (0, 1, 2, 3):
        want = sum(1 for a in answers if int(a.summary.deepest_layer) <= layer)
        assert delta("memstrata_answer_depth_bucket", le=f"{float(layer)}") == want
    assert delta("memstrata_answer_depth_sum") == sum(int(a.summary.deepest_layer)
                                                      for a in answers)
    read = sum(a.summary.tokens["memory"].tokens_out for a in answers)
    assert read > 0 and delta("memstrata_memory_tokens_read_total") == read
    # Offline answers call no LLM: the LLM counters exist and did not move.
    assert ("memstrata_llm_cost_usd_total", ()) not in after or delta(
        "memstrata_llm_cost_usd_total") == 0
    assert delta("memstrata_answer_steps_count") == 3
    assert delta("memstrata_rpc_latency_seconds_count", method="Answer", code="OK") == 3
    l3_reads = sum(1 for a in answers for s in a.steps if s.layer == Layer.L3)
    assert delta("memstrata_layer_reads_total", layer="L3") == l3_reads
