"""LLM spend: token and cost counters, and daily budgets that fall back or refuse.

The server here answers with the LLM controller over ScriptedChatClient, the
TEST DOUBLE of the chat client from tests/integration/test_controller_llm.py
(scripted replies, real token counts); memory and gRPC are real.
"""

from __future__ import annotations

import urllib.request
from collections import deque

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from memstrata.model import Scope, Session
from query_service.keys import TenantPolicy, add_key, set_tenant_policy
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.integration.test_controller_llm import PRICES, ScriptedChatClient, answer_json, say
from tests.support.conversation import sessions as maya_sessions

# One answer: the controller stops at once, then notes and answer (3 calls, 110 tokens each).
TOKENS_PER_ANSWER = 3 * 110


def script(chat: ScriptedChatClient) -> None:
    """The replies of one answer: the controller stops at once, then notes and answer."""
    chat.queues.setdefault("controller", deque()).append(say("Probably Pixel"))
    chat.queues.setdefault("synthesizer", deque()).append(
        say("RELEVANT FACTS: none\nANSWER HINT: Pixel"))
    chat.queues.setdefault("generator", deque()).append(answer_json("Pixel"))


@pytest.fixture(scope="module")
def llm(service: Service):
    chat = ScriptedChatClient()
    keys = service.keys.path
    key_spend = add_key(keys, "spender")[1]
    key_strict = add_key(keys, "strict")[1]
    set_tenant_policy(keys, "spender", TenantPolicy(daily_tokens=TOKENS_PER_ANSWER + 1))
    set_tenant_policy(keys, "strict", TenantPolicy(daily_usd=0.0,
                                                   on_budget_exhausted="refuse"))
    settings = ServiceSettings(port=0, metrics_port=0, keys_file=keys)
    handle = service.loop.run(build_server(
        service.memory, settings, controller_settings=ControllerSettings(policy="auto"),
        chat=chat, prices=PRICES, turn_limits=TurnLimits()))
    channel = grpc.insecure_channel(handle.address)
    try:
        yield handle, pb_grpc.MemoryServiceStub(channel), chat, key_spend, key_strict
    finally:
        channel.close()
        service.loop.run(handle.stop(0))


def _samples(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_token_and_cost_counters_then_budget_fallback(service: Service, llm):
    handle, stub, chat, key, _ = llm
    port = handle.metrics_http.server_port
    spender = Scope(tenant_id="spender", user_id="maya")  # maya's history, another tenant
    service.memory.ingest([Session(meta=s.meta.model_copy(update={"scope": spender}),
                                   turns=s.turns) for s in maya_sessions()])
    request = pb.AnswerRequest(user_id="maya", question="What is my kitten called?")
    md = (("x-api-key", key),)
    script(chat)
    first = stub.Answer(request, metadata=md)
    assert first.mode == "llm" and first.answer == "Pixel" and not first.budget_fallback
    after = _samples(port)
    assert after[("memstrata_llm_calls_total", (("role", "controller"),))] == 1
    for role in ("controller", "synthesizer", "generator"):
        assert after[("memstrata_llm_tokens_total", (("direction", "in"), ("role", role)))] == 100
        assert after[("memstrata_llm_tokens_total", (("direction", "out"), ("role", role)))] == 10
    cost = after[("memstrata_llm_cost_usd_total", (("model", "controller-model"),))]
    assert cost == pytest.approx((100 * 2 + 10 * 8) / 1e6)
    assert sum(v for (n, _), v in after.items() if n == "memstrata_llm_cost_usd_total") \
        == pytest.approx(first.summary.cost_usd)
    # 330 of 331 tokens spent: one more answer may start; it spends past the budget.
    script(chat)
    assert stub.Answer(request, metadata=md).mode == "llm"
    # Now the budget is gone: the offline controller answers, marked as such.
    fallback = stub.Answer(request, metadata=md)
    assert fallback.budget_fallback and fallback.mode == "offline-extractive"
    assert fallback.answer == "Pixel" and fallback.summary.llm_calls == 0
    assert chat.exhausted()
    assert _samples(port)[("memstrata_budget_fallbacks_total", ())] == 1


def test_refusing_tenant_gets_resource_exhausted(llm):
    _, stub, chat, _, strict = llm
    with pytest.raises(grpc.RpcError) as info:
        stub.Answer(pb.AnswerRequest(user_id="maya", question="What is my kitten called?"),
                    metadata=(("x-api-key", strict),))
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "tenant strict: daily LLM budget spent" in info.value.details()
    assert chat.exhausted()  # nothing was spent


def test_a_budget_holds_across_two_replicas_over_one_ledger(service: Service, osmem_clone):
    """Two servers over one OpenSearch ledger (issue 37): one budget, not one per replica.

    Budget: three answers and a token. Each replica alone would give four LLM
    answers (eight in all); sharing, at most one answer per replica passes the
    budget (docs/reliability.md, "Limits and budgets across replicas").
    """
    keys = service.keys.path
    key = add_key(keys, "shared")[1]
    set_tenant_policy(keys, "shared", TenantPolicy(daily_tokens=3 * TOKENS_PER_ANSWER + 1))
    shared = Scope(tenant_id="shared", user_id="maya")
    service.memory.ingest([Session(meta=s.meta.model_copy(update={"scope": shared}),
                                   turns=s.turns) for s in maya_sessions()])
    settings = ServiceSettings(port=0, keys_file=keys, ledger="opensearch",
                               ledger_url=osmem_clone.url)
    chat = ScriptedChatClient()
    handles = [service.loop.run(build_server(
        service.memory, settings, controller_settings=ControllerSettings(policy="auto"),
        chat=chat, prices=PRICES, turn_limits=TurnLimits())) for _ in range(2)]
    channels = [grpc.insecure_channel(h.address) for h in handles]
    try:
        stubs = [pb_grpc.MemoryServiceStub(c) for c in channels]
        request = pb.AnswerRequest(user_id="maya", question="What is my kitten called?")
        modes = []
        for i in range(8):
            script(chat)
            reply = stubs[i % 2].Answer(request, metadata=(("x-api-key", key),))
            modes.append("llm" if reply.mode == "llm" else "fallback")
        llm_answers = modes.count("llm")
        assert 3 < llm_answers <= 3 + 2, modes  # the budget, plus at most one per replica
        assert modes[llm_answers:] == ["fallback"] * (8 - llm_answers), modes
    finally:
        for c in channels:
            c.close()
        for h in handles:
            service.loop.run(h.stop(0))
