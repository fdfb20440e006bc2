"""An answer has one time budget, and a model that keeps timing out is skipped (issue 34).

The model is :class:`FakeOpenAIServer`, a scripted TEST DOUBLE of an
OpenAI-compatible endpoint on a real socket, here one that never answers in
time; everything else is real (the ``openai`` SDK, MiniLM, Qdrant Edge,
tantivy, SQLite, the gRPC service). Before the budget, each LLM step failed
soft only after its own timeout, so nothing bounded the whole answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import FALLBACK_STEP, Controller
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.fallback import FallbackBuilder
from memstrata.llm.openai_compat import ChatClient, OpenAIBuilder
from memstrata.llm.usage import UsageMeter
from memstrata.memory import Memory
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from tests.support.conversation import ASKED_ON, MAYA, open_memory
from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body

pytestmark = pytest.mark.integration

CHAT = FakeOpenAIServer.CHAT
#: A reply that comes far too late for any budget these tests set.
NEVER = Reply(200, chat_body("too late"), delay_s=60.0)
#: What an answer may take beyond its budget (the offline answer on a busy 2-core machine).
SLACK_S = 2.0
QUESTION = "What is the name of my kitten?"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embed_dim=8) as srv:
        srv.set_fallback(CHAT, NEVER)
        yield srv


def llm_memory(data_dir: Path, embedder: MiniLMEmbedder, server: FakeOpenAIServer,
               **overrides: Any) -> Memory:
    """The test conversation (L0 built offline), read with an LLM builder on ``server``."""
    open_memory(data_dir, embedder).close()
    values: dict[str, Any] = dict(
        data_dir=data_dir, llm_backend="openai", llm_base_url=server.base_url,
        llm_max_retries=0, llm_timeout_s=30.0, llm_breaker_failures=0,
        llm_model_builder="builder-m", llm_model_controller="controller-m",
        llm_model_synthesizer="synth-m", llm_model_generator="gen-m")
    values.update(overrides)
    settings = Settings(**values)
    meter = UsageMeter()
    client = ChatClient(settings, meter, sleep=lambda s: None)
    builder = FallbackBuilder(OpenAIBuilder(settings, client=client), ExtractiveBuilder(), meter)
    return Memory(settings, builder, embedder, open_vector_store(settings, embedder.dim),
                  open_lexical_store(settings), open_doc_store(settings), meter)


def test_an_answer_whose_llm_never_replies_is_given_offline_within_its_budget(
        server: FakeOpenAIServer, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    memory = llm_memory(tmp_path, embedder, server)
    try:
        chat = ChatClient(memory.settings, memory.meter, sleep=lambda s: None)
        controller = Controller(memory, ControllerSettings(answer_budget_s=3.0), chat)
        t0 = time.monotonic()
        a = controller.answer(MAYA, QUESTION, ASKED_ON)
        took = time.monotonic() - t0
        assert took < 3.0 + SLACK_S, f"answered after {took:.1f} s"
        assert a.mode == "offline-extractive" and a.fallback == "controller: budget"
        first = a.steps[0]
        assert first.tool == FALLBACK_STEP
        assert first.arguments == {"fallback": "controller: budget", "budget_s": 3.0}
        assert "Pixel" in a.answer  # the offline answer is still a real one
        # One request (the controller's first step); past the deadline nothing was sent:
        # the L1/L2 the offline answer read were built by the extractive fallback at once.
        assert len(server.requests(CHAT)) == 1
        fallbacks = memory.meter.fallbacks()
        assert fallbacks[("controller", "budget")] == 1
        assert fallbacks[("builder", "budget")] >= 1
        # The trace covers the whole answer, the failed LLM path included.
        assert a.summary.ms_total >= 2000
    finally:
        memory.close()


def test_a_model_that_timed_out_is_skipped_for_the_rest_of_the_answer(
        server: FakeOpenAIServer, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    # The rule policy: only the builder uses the model (the L1/L2 the answer reads).
    memory = llm_memory(tmp_path, embedder, server, llm_timeout_builder_s=1.0,
                        llm_fallback_retry_s=0.0)
    try:
        controller = Controller(memory, ControllerSettings(policy="rules"))
        t0 = time.monotonic()
        a = controller.answer(MAYA, QUESTION, ASKED_ON)
        took = time.monotonic() - t0
        reads = [s for s in a.steps if s.tool in ("read_facts", "read_turns")]
        assert len(reads) >= 3  # several layer builds were needed ...
        assert len(server.requests(CHAT)) == 1  # ... one was tried, then the model skipped
        assert memory.meter.fallbacks()[("builder", "timeout")] == 1
        assert memory.meter.fallbacks()[("builder", "unavailable")] >= 2
        assert took < 1.0 + SLACK_S, f"answered after {took:.1f} s"
        assert a.mode == "offline-extractive" and "Pixel" in a.answer
        # The breaker belongs to one answer: the next one tries the model again.
        server.clear_requests()
        controller.answer(MAYA, QUESTION, ASKED_ON)
        assert len(server.requests(CHAT)) == 1
    finally:
        memory.close()


def test_the_grpc_call_deadline_bounds_the_answer(
        server: FakeOpenAIServer, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    from memstrata.client import MemoryClient
    from memstrata.limits import TurnLimits
    from query_service.keys import add_key
    from query_service.server import build_server
    from query_service.settings import ServiceSettings
    from tests.integration.query_service.support import LoopThread

    memory = llm_memory(tmp_path / "data", embedder, server)
    chat = ChatClient(memory.settings, memory.meter, sleep=lambda s: None)
    keys = tmp_path / "keys.json"
    key = add_key(keys, "acme")[1]
    loop = LoopThread()
    handle = None
    try:
        # The service's own budget is long: only the call's deadline can stop the answer.
        handle = loop.run(build_server(
            memory, ServiceSettings(port=0, metrics_port=None, keys_file=keys, grace_s=1),
            controller_settings=ControllerSettings(answer_budget_s=600.0), chat=chat,
            turn_limits=TurnLimits()))
        with MemoryClient(handle.address, api_key=key) as client:
            t0 = time.monotonic()
            a = client.answer(MAYA, QUESTION, ASKED_ON, timeout_s=4.0)
            took = time.monotonic() - t0
        assert took < 4.0, f"answered after {took:.1f} s"  # before the client gave up
        assert a.mode == "offline-extractive" and "Pixel" in a.answer
        assert a.steps[0].tool == FALLBACK_STEP
        assert a.steps[0].arguments["fallback"] == "controller: budget"
        assert float(a.steps[0].arguments["budget_s"]) < 4.0  # the deadline, not the setting
    finally:
        if handle is not None:
            loop.run(handle.stop(0))
        loop.close()
        memory.close()
