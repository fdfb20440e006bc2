"""Profiles read by the LLM on Memory's write path, failing soft to the rules.

The model is :class:`FakeOpenAIServer`, a scripted TEST DOUBLE of an
OpenAI-compatible endpoint on a real socket; the ``openai`` SDK, the builders,
MiniLM and the stores are real. The profile role is told apart from the L0
builds by its system prompt, so the two are answered (and counted) separately.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.fallback import FallbackBuilder
from memstrata.llm.openai_compat import ChatClient, OpenAIBuilder
from memstrata.llm.usage import UsageMeter
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.profiles.extract import extract_session
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body

pytestmark = pytest.mark.integration

CHAT = FakeOpenAIServer.CHAT
SAM = Scope(tenant_id="acme", user_id="sam")
PROFILE_MARK = "You keep the profiles"

SESSION = Session(
    meta=SessionMeta(scope=SAM, session_id="s1", session_date=datetime(2024, 3, 2, 9, 0)),
    turns=[Turn(index=1, messages=[
               Message(role="user", content="Ines, my sister, has been in Porto for a while now.",
                       source_id="u1"),
               Message(role="assistant", content="Porto is lovely in spring.", source_id="a1")]),
           Turn(index=2, messages=[
               Message(role="user", content="These days she only touches fish, nothing else.",
                       source_id="u2"),
               Message(role="assistant", content="Then try the grilled sardines.",
                       source_id="a2")])])
READ: dict[str, Any] = {
    "entities": [{"id": "e1", "name": "Inês", "relation": "sister", "of": "user",
                  "kind": "person", "gender": "female", "turns": [1, 2]}],
    "facts": [{"about": "e1", "attribute": "lives_in", "value": "Porto", "date": "2024",
               "turn": 1, "said_by": "user"},
              {"about": "e1", "attribute": "eats", "value": "fish", "date": None, "turn": 2,
               "said_by": "user"}],
}


def l0_reply(body: dict[str, Any]) -> Reply:
    """Summaries for the turns the L0 prompt asks for."""
    asked = re.search(r"Write entries for turns: ([\d, ]+)", body["messages"][-1]["content"])
    turns = [int(n) for n in asked.group(1).split(",")] if asked else []
    return Reply(200, chat_body(json.dumps({"turns": [
        {"turn_number": n, "summary": f"turn {n}", "keywords": [], "tags": []} for n in turns]})))


class Endpoint:
    """Routes the double's chat calls: L0 builds answered, profile reads as scripted."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self.profile: Callable[[dict[str, Any]], Reply] = lambda body: Reply(
            200, chat_body(json.dumps(READ), prompt_tokens=70, completion_tokens=30))
        server.set_fallback(CHAT, self._reply)

    def _reply(self, body: dict[str, Any]) -> Reply:
        if PROFILE_MARK in body["messages"][0]["content"]:
            return self.profile(body)
        return l0_reply(body)

    def profile_calls(self) -> int:
        return sum(PROFILE_MARK in r.body["messages"][0]["content"]
                   for r in self.server.requests(CHAT))


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with FakeOpenAIServer(embed_dim=8) as srv:
        yield Endpoint(srv)


def open_llm_memory(endpoint: Endpoint, path: Path, embedder: MiniLMEmbedder,
                    **overrides: Any) -> Memory:
    values: dict[str, Any] = dict(
        data_dir=path, llm_backend="openai", llm_base_url=endpoint.server.base_url,
        llm_max_retries=0, llm_timeout_s=5.0, llm_model_builder="builder-m",
        llm_breaker_failures=0)
    values.update(overrides)
    settings = Settings(**values)
    meter = UsageMeter()
    client = ChatClient(settings, meter, sleep=lambda s: None)
    builder = FallbackBuilder(OpenAIBuilder(settings, client=client), ExtractiveBuilder(), meter)
    return Memory(settings, builder, embedder, open_vector_store(settings, embedder.dim),
                  open_lexical_store(settings), open_doc_store(settings), meter)


def bullets(memory: Memory, entity: str) -> dict[str, dict[str, Any]]:
    (view,) = memory.profiles.find(SAM, entity)
    return {b["value"]: b for section in view["sections"].values() for b in section}


def test_the_llm_read_becomes_bullets_with_sources_once_per_content(
        endpoint: Endpoint, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    rules = {f.value for f in extract_session(SESSION.meta, SESSION.turns).facts}
    assert "Porto" not in rules and "eats fish" not in rules  # only the LLM reads these
    with open_llm_memory(endpoint, tmp_path / "batch", embedder) as m:
        m.ingest([SESSION])
        sister = bullets(m, "my sister")
        assert sister["Porto"]["sources"] == [{"s": "s1", "t": 1, "m": ["u1"]}]
        assert sister["eats fish"]["sources"] == [{"s": "s1", "t": 2, "m": ["u2"]}]
        assert m.profiles.find(SAM, "Inês") == m.profiles.find(SAM, "my sister")
        reads = m.profiles.reads(SAM)
        assert reads["s1"]["via"] == "llm" and "fallback" not in reads["s1"]
        assert endpoint.profile_calls() == 1 and not m.meter.fallbacks()
        # Construction cost: the read is booked on the builder role, with its tokens.
        builder = m.meter.snapshot()["builder"]
        assert builder.prompt_tokens >= 70 and builder.completion_tokens >= 30
        batch = m.docs.get_profiles(SAM)
        # A rebuild reuses the stored read of unchanged content: no new call, same records.
        m.profiles.rebuild(SAM, [(SESSION.meta, SESSION.turns)]).apply(m.docs)
        assert endpoint.profile_calls() == 1 and m.docs.get_profiles(SAM) == batch
        # A delete takes the read with the rest of the session's share.
        m.delete(SAM, "s1")
        assert m.docs.get_profiles(SAM) == {} and m.profiles.reads(SAM) == {}

    endpoint.server.clear_requests()
    with open_llm_memory(endpoint, tmp_path / "append", embedder) as m:
        for t in SESSION.turns:
            m.append_messages(SESSION.meta, t.messages)
        assert endpoint.profile_calls() == 2  # one read per new content of the session
        assert m.docs.get_profiles(SAM) == batch

    endpoint.server.clear_requests()
    with open_llm_memory(endpoint, tmp_path / "stream", embedder) as m:  # the stream's way
        for t in SESSION.turns:
            for msg in t.messages:
                m.append_batch([(SESSION.meta, [msg])], hold=[(SAM, "s1")])
        assert endpoint.profile_calls() == 0  # held: the rules stand in, marked
        assert m.profiles.reads(SAM)["s1"]["fallback"] == "held"
        m.close_session(SAM, "s1")
        assert endpoint.profile_calls() == 1  # one read of the whole session
        assert m.docs.get_profiles(SAM) == batch


@pytest.mark.parametrize(("reply", "reason"), [
    (Reply(200, chat_body('{"entities": [{"id": "e1", "kind": "planet"}]}')), "unparsable"),
    (Reply(200, chat_body("Sure! Ines is the sister.")), "unparsable"),
    (Reply(200, chat_body(json.dumps(READ)), delay_s=1.5), "timeout"),
])
def test_a_bad_or_slow_read_falls_back_to_the_rules_marked_counted_and_retried(
        endpoint: Endpoint, tmp_path: Path, embedder: MiniLMEmbedder, reply: Reply,
        reason: str) -> None:
    endpoint.profile = lambda body: reply
    with open_llm_memory(endpoint, tmp_path / "llm", embedder, llm_timeout_builder_s=0.5) as m:
        m.ingest([SESSION])
        assert m.profiles.reads(SAM)["s1"]["fallback"] == reason
        assert m.meter.fallbacks() == {("builder", reason): 1}
        fell_back = m.docs.get_profiles(SAM)
    settings = Settings(data_dir=tmp_path / "rules")
    with Memory(settings, ExtractiveBuilder(), embedder,
                open_vector_store(settings, embedder.dim), open_lexical_store(settings),
                open_doc_store(settings)) as offline:
        offline.ingest([SESSION])
        by_rules = offline.docs.get_profiles(SAM)
    assert {k: v for k, v in fell_back.items() if k != "#index"} == {
        k: v for k, v in by_rules.items() if k != "#index"}  # the rules' profile, whole
    # The next write of the session asks the model again (a fallback is not kept).
    endpoint.profile = lambda body: Reply(200, chat_body(json.dumps(READ)))
    with open_llm_memory(endpoint, tmp_path / "llm", embedder) as m:
        before = endpoint.profile_calls()
        m.profiles.rebuild(SAM, [(SESSION.meta, SESSION.turns)]).apply(m.docs)
        assert endpoint.profile_calls() == before + 1
        assert m.profiles.reads(SAM)["s1"]["via"] == "llm"
        assert "Porto" in bullets(m, "my sister")
