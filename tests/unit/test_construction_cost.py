"""Construction (builder) cost: per session at ingest, as a metric, and per question in eval."""

from __future__ import annotations

from datetime import datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from memstrata.contract import Answer, RoleTokens, TraceSummary
from memstrata.eval.cost import add_offline, answer_cost, cost_report, haystack_tokens
from memstrata.llm.construction import ConstructionMeter, describe
from memstrata.llm.metrics import register_llm_metrics
from memstrata.llm.usage import ModelPrice, PriceTable, RoleUsage, UsageMeter
from memstrata.model import Message, Scope, Session, SessionMeta, TraceStep, Turn

PRICES = PriceTable(models={"b": ModelPrice(input_per_mtok=1.0, output_per_mtok=4.0),
                            "c": ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0)})


def session(user: str, sid: str, text: str = "I adopted a kitten named Pixel.") -> Session:
    return Session(meta=SessionMeta(scope=Scope(tenant_id="t", user_id=user), session_id=sid,
                                    session_date=datetime(2024, 1, 1)),
                   turns=[Turn(index=1, messages=[Message(role="user", content=text)])])


def test_each_session_gets_the_builder_calls_made_while_it_was_built() -> None:
    meter = UsageMeter()
    built = ConstructionMeter(meter)
    calls = {"s1": 2, "s2": 0, "s3": 1}
    # What a writer does: it builds each session before it asks for the next one.
    for s in built.track([session("u1", "s1"), session("u1", "s2"), session("u2", "s3")]):
        for _ in range(calls[s.session_id]):
            meter.record("builder", 100, 10, "b")
        meter.record("controller", 999, 99, "c")  # other roles are not construction
    assert [(c.session_id, c.usage.calls) for c in built.sessions] == [
        ("s1", 2), ("s2", 0), ("s3", 1)]
    assert built.total == RoleUsage(calls=3, prompt_tokens=300, completion_tokens=30)
    assert built.by_user()[("t", "u1")].calls == 2
    usd, unpriced = built.cost(PRICES)
    assert usd == pytest.approx(3 * (100 * 1.0 + 10 * 4.0) / 1e6) and unpriced == []
    assert built.only_model == "b"
    assert describe(built.total, usd) == \
        "3 builder calls, 300 tokens in / 30 out, $0.000420"
    assert "no price for 'b'" in describe(built.total, None, ["b"])
    assert describe(RoleUsage(), 0.0) == "0 builder calls, 0 tokens in / 0 out"


def test_construction_tokens_are_exported_as_counters() -> None:
    meter = UsageMeter()
    meter.record("builder", 120, 30, "b")
    meter.record("builder", 80, 20, "b")
    meter.record("generator", 5, 5, "c")
    registry = CollectorRegistry()
    register_llm_metrics(registry, meter)
    text = generate_latest(registry).decode()
    assert "memstrata_construction_calls_total 2.0" in text
    assert 'memstrata_construction_tokens_total{direction="in"} 200.0' in text
    assert 'memstrata_construction_tokens_total{direction="out"} 50.0' in text


def _answer() -> Answer:
    steps = [TraceStep(step=1, tool="llm:builder", arguments={"model": "b"}, tokens_in=1000,
                       tokens_out=100),
             TraceStep(step=1, tool="read_facts", tokens_out=40, cached=False),
             TraceStep(step=2, tool="llm:controller", arguments={"model": "c"}, tokens_in=500,
                       tokens_out=50)]
    summary = TraceSummary(policy="llm", tokens={
        "builder": RoleTokens(calls=1, tokens_in=1000, tokens_out=100),
        "controller": RoleTokens(calls=1, tokens_in=500, tokens_out=50),
        "memory": RoleTokens(calls=1, tokens_out=40, estimated=True)},
        cost_usd=(1000 * 1.0 + 100 * 4.0 + 500 * 2.0 + 50 * 8.0) / 1e6)
    return Answer(question="q", answer="a", mode="llm", steps=steps, summary=summary)


def test_an_answers_cost_splits_into_construction_and_answering() -> None:
    c = answer_cost(_answer(), PRICES)
    assert c["lazy_construction_usd"] == pytest.approx(1400 / 1e6)
    assert c["online_usd"] == pytest.approx(1400 / 1e6)
    assert (c["lazy_construction_tokens"], c["online_tokens"], c["memory_tokens_read"]) == (
        1100, 550, 40)
    # Two questions share their user's ingest construction.
    full = add_offline(c, RoleUsage(calls=2, prompt_tokens=3000, completion_tokens=1000),
                       0.01, questions=2, haystack=400)
    assert full["offline_usd"] == pytest.approx(0.005 + 1400 / 1e6)
    assert full["offline_tokens"] == pytest.approx(2000 + 1100)
    assert full["haystack_read"] == pytest.approx(0.1)
    report = cost_report([full, full, {}])
    assert report["questions"] == 2
    assert report["online_usd"]["total"] == pytest.approx(2 * 1400 / 1e6)
    assert report["haystack_read"]["mean"] == pytest.approx(0.1)


def test_the_haystack_is_counted_per_user() -> None:
    sizes = haystack_tokens([session("u1", "s1"), session("u1", "s2"), session("u2", "s3")])
    assert sizes[("t", "u1")] == 2 * sizes[("t", "u2")] > 0
