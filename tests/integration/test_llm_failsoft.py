"""The LLM path fails soft: caps, time limits, fallbacks that are marked, counted and redone.

The model is :class:`FakeOpenAIServer`, a scripted TEST DOUBLE of an
OpenAI-compatible endpoint on a real socket; everything else is real (the
``openai`` SDK, the extractive builder, MiniLM, Qdrant Edge, tantivy, SQLite).
The same behaviour against a real llama-server is in ``tests/integration/llm``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import FALLBACK_STEP, Controller
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.limits import TurnLimits
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.fallback import FallbackBuilder
from memstrata.llm.metrics import register_llm_metrics
from memstrata.llm.openai_compat import Breaker, ChatClient, OpenAIBuilder
from memstrata.llm.types import LLMError
from memstrata.llm.usage import UsageMeter
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body

pytestmark = pytest.mark.integration

CHAT = FakeOpenAIServer.CHAT
MAYA = Scope(tenant_id="acme", user_id="maya")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embed_dim=8) as srv:
        yield srv


def settings_for(server: FakeOpenAIServer, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = dict(
        data_dir=tmp_path, llm_backend="openai", llm_base_url=server.base_url,
        llm_max_retries=0, llm_timeout_s=5.0, llm_model_builder="builder-m",
        llm_model_controller="controller-m", llm_model_synthesizer="synth-m",
        llm_model_generator="gen-m")
    values.update(overrides)
    return Settings(**values)


def client_for(settings: Settings, meter: UsageMeter | None = None) -> ChatClient:
    return ChatClient(settings, meter or UsageMeter(), sleep=lambda s: None)


def session(sid: str, n: int, date: datetime = datetime(2024, 3, 2, 9, 15)) -> Session:
    topics = ["a trip to Lisbon with my sister Ines", "seafood at Cervejaria Ramiro",
              "training for a half marathon", "a grey kitten named Pixel",
              "a promotion to senior designer"]
    turns = [Turn(index=i, messages=[
        Message(role="user", content=f"Let me tell you about {topics[(i - 1) % len(topics)]}."),
        Message(role="assistant", content="That sounds lovely, tell me more.")])
        for i in range(1, n + 1)]
    return Session(meta=SessionMeta(scope=MAYA, session_id=sid, session_date=date), turns=turns)


def l0_reply(*turns: int) -> Reply:
    body = {"turns": [{"turn_number": n, "summary": f"LLM summary of turn {n}.",
                       "keywords": [f"kw{n}"], "tags": ["llm"]} for n in turns]}
    return Reply(200, chat_body(json.dumps(body)))


def failing(status: int = 503) -> Reply:
    return Reply(status, {"error": {"message": "scripted outage", "type": "x", "code": "x"}})


@pytest.fixture
def llm_memory(server: FakeOpenAIServer, tmp_path: Path,
               embedder: MiniLMEmbedder) -> Iterator[Memory]:
    # These tests script the layer builds call by call; the profile role (one more builder
    # call per written session) has its own in test_profiles_llm.py.
    settings = settings_for(server, tmp_path, llm_breaker_failures=0, profiles=False)
    meter = UsageMeter()
    builder = FallbackBuilder(OpenAIBuilder(settings, client=client_for(settings, meter)),
                              ExtractiveBuilder(), meter)
    memory = Memory(settings, builder, embedder, open_vector_store(settings, embedder.dim),
                    open_lexical_store(settings), open_doc_store(settings), meter)
    yield memory
    memory.close()


# -- caps and time limits -------------------------------------------------------------


def test_every_role_sends_its_own_max_tokens(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = client_for(settings_for(server, tmp_path, llm_max_tokens_builder=111,
                                     llm_max_tokens_controller=222,
                                     llm_max_tokens_synthesizer=333,
                                     llm_max_tokens_generator=44))
    for role in ("builder", "controller", "synthesizer", "generator", "judge"):
        server.queue_chat("ok")
        client.chat(role, [{"role": "user", "content": "q"}])  # type: ignore[arg-type]
    sent = [r.body["max_tokens"] for r in server.requests(CHAT)]
    assert sent == [111, 222, 333, 44, 44]  # the judge shares the generator's cap


def test_each_role_has_its_own_timeout(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = client_for(settings_for(server, tmp_path, llm_timeout_generator_s=0.3,
                                     llm_breaker_failures=0))
    server.queue(CHAT, Reply(200, chat_body("slow"), delay_s=1.0))
    with pytest.raises(LLMError, match="timed out") as caught:
        client.chat("generator", [{"role": "user", "content": "q"}])
    assert caught.value.reason == "timeout" and caught.value.role == "generator"
    server.queue(CHAT, Reply(200, chat_body("slow but allowed"), delay_s=1.0))
    reply = client.chat("builder", [{"role": "user", "content": "q"}])  # 5 s for the builder
    assert reply.message.content == "slow but allowed"


def test_retries_are_bounded(server: FakeOpenAIServer, tmp_path: Path) -> None:
    sleeps: list[float] = []
    settings = settings_for(server, tmp_path, llm_max_retries=1, llm_breaker_failures=0)
    client = ChatClient(settings, UsageMeter(), sleep=sleeps.append)
    server.queue(CHAT, failing(), failing(), failing())
    with pytest.raises(LLMError, match="HTTP 503"):
        client.chat("builder", [{"role": "user", "content": "q"}])
    assert len(server.requests(CHAT)) == 2 and len(sleeps) == 1
    assert Settings(data_dir=tmp_path).llm_max_retries == 1  # was 4 x 60 s


def test_json_cut_off_at_max_tokens_is_not_asked_again(server: FakeOpenAIServer,
                                                       tmp_path: Path) -> None:
    client = client_for(settings_for(server, tmp_path, llm_max_tokens_builder=32))
    server.queue_chat('{"turns": [{"turn_number": 1, "summ', finish_reason="length")
    server.queue_chat('{"never": "asked"}')
    with pytest.raises(LLMError, match="MEMSTRATA_LLM_MAX_TOKENS_BUILDER") as caught:
        client.complete_json("builder", [{"role": "user", "content": "json please"}])
    assert caught.value.reason == "truncated"
    assert len(server.requests(CHAT)) == 1


def test_breaker_stops_calling_a_failing_endpoint(server: FakeOpenAIServer,
                                                  tmp_path: Path) -> None:
    client = client_for(settings_for(server, tmp_path, llm_breaker_failures=2,
                                     llm_breaker_cooldown_s=600))
    server.queue(CHAT, failing(), failing())
    for _ in range(2):
        with pytest.raises(LLMError, match="HTTP 503"):
            client.chat("controller", [{"role": "user", "content": "q"}])
    with pytest.raises(LLMError, match="failed 2 calls in a row") as caught:
        client.chat("builder", [{"role": "user", "content": "q"}])
    assert caught.value.reason == "unavailable"
    assert len(server.requests(CHAT)) == 2  # the third call never left the process


def test_breaker_lets_one_probe_through_after_the_cooldown() -> None:
    now = [0.0]
    breaker = Breaker(2, 30.0, clock=lambda: now[0])
    breaker.failed()
    assert breaker.allow()
    breaker.failed()
    assert not breaker.allow()
    now[0] = 31.0
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # only one at a time
    breaker.succeeded()
    assert breaker.allow() and breaker.allow()


# -- L0: fallback at ingest, marked, counted, rebuilt ------------------------------------


def test_failed_window_falls_back_is_marked_counted_and_rebuilt(
        server: FakeOpenAIServer, llm_memory: Memory) -> None:
    s = session("s1", 5)  # windows: turns 1-4, then 4-5 (targets 5)
    server.queue(CHAT, l0_reply(1, 2, 3, 4), failing())
    report = llm_memory.ingest([s])
    assert report.committed == 1 and report.fallbacks == 1
    units = {u.turn_index: u for u in llm_memory.l0(MAYA, "s1")}
    assert sorted(units) == [1, 2, 3, 4, 5]  # everything is stored and searchable
    assert [units[i].fallback for i in range(1, 6)] == [None, None, None, None, "http"]
    assert units[1].summary == "LLM summary of turn 1."
    assert units[5].summary and "LLM summary" not in units[5].summary
    assert llm_memory.meter.fallbacks() == {("builder", "http"): 1}
    assert llm_memory.search(MAYA, "promotion senior designer")[0].session_id == "s1"

    # The next ingest of the same file rebuilds only the window that fell back.
    server.clear_requests()
    server.queue(CHAT, l0_reply(5))
    again = llm_memory.ingest([s])
    assert again.unchanged == 0 and again.fallbacks == 0
    assert len(server.requests(CHAT)) == 1
    fixed = {u.turn_index: u for u in llm_memory.l0(MAYA, "s1")}
    assert fixed[5].fallback is None and fixed[5].summary == "LLM summary of turn 5."
    assert fixed[1] == units[1]

    # Now the session is done: a third ingest skips it without calling the model.
    server.clear_requests()
    assert llm_memory.ingest([s]).unchanged == 1
    assert server.requests(CHAT) == []


def test_unparsable_and_incomplete_replies_fall_back(server: FakeOpenAIServer,
                                                     llm_memory: Memory) -> None:
    server.queue_chat("I'd rather chat about the weather.")
    server.queue_chat("Still no JSON, sorry.")
    llm_memory.ingest([session("garbled", 2)])
    assert {u.fallback for u in llm_memory.l0(MAYA, "garbled")} == {"unparsable"}
    server.queue(CHAT, l0_reply(1))  # the model left turn 2 out
    llm_memory.ingest([session("partial", 2)])
    units = {u.turn_index: u for u in llm_memory.l0(MAYA, "partial")}
    assert units[1].fallback is None and units[2].fallback == "incomplete"
    assert "LLM summary" not in units[2].summary
    assert llm_memory.meter.fallbacks() == {("builder", "unparsable"): 1,
                                            ("builder", "incomplete"): 1}


def test_stream_appends_fall_back_and_the_next_append_retries(server: FakeOpenAIServer,
                                                              llm_memory: Memory) -> None:
    meta = SessionMeta(scope=MAYA, session_id="live", session_date=datetime(2024, 6, 1))
    server.queue(CHAT, failing())
    first = llm_memory.append_batch([(meta, [Message(role="user", content="I moved to Porto."),
                                             Message(role="assistant", content="Nice!")])])
    assert first[0].units_written == [1]
    assert llm_memory.l0(MAYA, "live")[0].fallback == "http"
    server.queue(CHAT, l0_reply(1, 2))  # the window (turns 1-2) is built again, by the LLM
    llm_memory.append_batch([(meta, [Message(role="user", content="And I got a dog.")])])
    units = llm_memory.l0(MAYA, "live")
    assert [u.fallback for u in units] == [None, None]


def test_fallbacks_are_exported_as_a_prometheus_counter() -> None:
    meter = UsageMeter()
    meter.record_fallback("builder", "timeout")
    meter.record_fallback("controller", "connection")
    registry = CollectorRegistry()
    register_llm_metrics(registry, meter, meter)  # the same meter twice is counted once
    text = generate_latest(registry).decode()
    assert 'memstrata_llm_fallbacks_total{reason="timeout",role="builder"} 1.0' in text
    assert 'memstrata_llm_fallbacks_total{reason="connection",role="controller"} 1.0' in text


# -- L1/L2: lazy builds fall back, cached marked, built again later -----------------------


def test_lazy_layers_fall_back_and_are_rebuilt_after_the_retry_interval(
        server: FakeOpenAIServer, llm_memory: Memory) -> None:
    server.queue(CHAT, l0_reply(1, 2))
    llm_memory.ingest([session("s1", 2)])
    now = [1000.0]
    llm_memory.layers._clock = lambda: now[0]
    server.queue(CHAT, failing())
    facts = llm_memory.facts(MAYA, "s1")
    assert facts.fallback == "http" and facts.facts  # extractive facts, marked
    server.clear_requests()
    assert llm_memory.facts(MAYA, "s1").fallback == "http"  # served from the cache ...
    assert server.requests(CHAT) == []  # ... without asking the model again
    now[0] += llm_memory.settings.llm_fallback_retry_s + 1
    server.queue_json({"facts": [{"text": "Maya has a sister named Ines.", "turns": [1]}]})
    rebuilt = llm_memory.facts(MAYA, "s1")
    assert rebuilt.fallback is None
    assert [f.text for f in rebuilt.facts] == ["Maya has a sister named Ines."]
    server.queue(CHAT, failing())
    assert llm_memory.notes(MAYA, "s1").fallback == "http"
    assert llm_memory.meter.fallbacks() == {("builder", "http"): 2}


# -- answers: offline fallback or a clean failure -----------------------------------------


def test_answer_falls_back_offline_when_the_llm_fails(server: FakeOpenAIServer,
                                                      llm_memory: Memory) -> None:
    server.queue(CHAT, l0_reply(1, 2, 3, 4), l0_reply(5))
    llm_memory.ingest([session("s1", 5)])
    chat = client_for(llm_memory.settings, llm_memory.meter)
    controller = Controller(llm_memory, ControllerSettings(), chat)
    server.queue(CHAT, failing())
    answer = controller.answer(MAYA, "What is the name of my kitten?")
    assert answer.mode == "offline-extractive" and answer.fallback == "controller: http"
    assert answer.steps[0].tool == FALLBACK_STEP and "HTTP 503" in (answer.steps[0].note or "")
    assert "Pixel" in answer.answer
    assert llm_memory.meter.fallbacks()[("controller", "http")] == 1

    strict = Controller(llm_memory, ControllerSettings(on_llm_error="fail"), chat)
    server.queue(CHAT, failing())
    with pytest.raises(LLMError, match="controller call to model 'controller-m' failed"):
        strict.answer(MAYA, "What is the name of my kitten?")


def test_role_limits_are_settings_and_bad_values_name_the_variable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memstrata.config import ConfigError, load_settings
    from memstrata.controller.config import load_controller_settings

    monkeypatch.setenv("MEMSTRATA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMSTRATA_LLM_TIMEOUT_CONTROLLER_S", "7.5")
    monkeypatch.setenv("MEMSTRATA_LLM_MAX_TOKENS_GENERATOR", "64")
    s = load_settings()
    assert s.llm_timeout_for("controller") == 7.5 and s.llm_timeout_for("builder") == 30.0
    assert s.llm_max_tokens_for("judge") == 64
    monkeypatch.setenv("MEMSTRATA_LLM_MAX_TOKENS_BUILDER", "5")
    with pytest.raises(ConfigError, match="MEMSTRATA_LLM_MAX_TOKENS_BUILDER"):
        load_settings()
    monkeypatch.setenv("MEMSTRATA_CONTROLLER_ON_LLM_ERROR", "shrug")
    with pytest.raises(ConfigError, match="MEMSTRATA_CONTROLLER_ON_LLM_ERROR"):
        load_controller_settings()


def test_query_service_metrics_show_the_fallbacks(server: FakeOpenAIServer,
                                                  llm_memory: Memory) -> None:
    import asyncio

    from query_service.server import build_server
    from query_service.settings import ServiceSettings

    server.queue(CHAT, failing())
    llm_memory.ingest([session("s1", 2)])  # one window, built by the fallback

    async def scrape() -> str:
        handle = await build_server(llm_memory, ServiceSettings(port=0, host="127.0.0.1"),
                                    controller_settings=ControllerSettings(policy="rules"),
                                    turn_limits=TurnLimits())
        try:
            return generate_latest(handle.metrics.registry).decode()
        finally:
            await handle.stop(0)

    text = asyncio.run(scrape())
    assert 'memstrata_llm_fallbacks_total{reason="http",role="builder"} 1.0' in text
