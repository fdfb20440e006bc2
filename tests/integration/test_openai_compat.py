"""ChatClient, OpenAIBuilder and OpenAIEmbedder against a real local HTTP server.

The server is :class:`FakeOpenAIServer`, a scripted test double; the client
side is the real ``openai`` SDK over a real socket.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.config import Settings
from memstrata.embed.factory import open_embedder
from memstrata.embed.openai_embed import OpenAIEmbedder
from memstrata.embed.types import EmbedError
from memstrata.llm.factory import open_builder
from memstrata.llm.fallback import FallbackBuilder
from memstrata.llm.openai_compat import ChatClient, OpenAIBuilder, extract_json_object
from memstrata.llm.types import LLMError, Window
from memstrata.llm.usage import UsageMeter
from memstrata.model import Message, Scope, SessionMeta, Turn
from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body, fake_vector

pytestmark = pytest.mark.integration

CHAT = FakeOpenAIServer.CHAT
EMB = FakeOpenAIServer.EMBEDDINGS


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embed_dim=8) as srv:
        yield srv


def make_settings(server: FakeOpenAIServer, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = dict(
        data_dir=tmp_path, llm_backend="openai", llm_base_url=server.base_url,
        llm_api_key="sk-test", llm_max_retries=2, llm_timeout_s=5.0, llm_temperature=0.2,
        llm_model_builder="builder-m", llm_model_controller="controller-m",
        llm_model_synthesizer="synth-m", llm_model_generator="gen-m",
        embed_backend="openai", embed_model="embed-m",
    )
    values.update(overrides)
    return Settings(**values)


def make_client(server: FakeOpenAIServer, tmp_path: Path, sleeps: list[float] | None = None,
                **overrides: Any) -> ChatClient:
    return ChatClient(make_settings(server, tmp_path, **overrides), UsageMeter(),
                      sleep=(sleeps.append if sleeps is not None else lambda s: None))


META = SessionMeta(scope=Scope(tenant_id="t1", user_id="u1"), session_id="s1",
                   session_date=datetime(2023, 5, 8, 13, 56))


def turn(index: int, user: str, reply: str = "Sounds great!") -> Turn:
    return Turn(index=index, messages=[
        Message(role="user", content=user, speaker="Caroline"),
        Message(role="assistant", content=reply, speaker="Melanie"),
    ])


# -- ChatClient: request shapes and usage -------------------------------------------


def test_complete_json_request_shape_and_usage(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    server.queue_json({"ok": True}, prompt_tokens=120, completion_tokens=7)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]

    assert client.complete_json("builder", msgs, schema_hint='{"ok": <bool>}') == {"ok": True}

    (req,) = server.requests(CHAT)
    assert req.body["model"] == "builder-m"
    assert req.body["temperature"] == 0.2
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.headers.get("authorization") == "Bearer sk-test"
    system, user = req.body["messages"]
    assert system["role"] == "system" and system["content"].startswith("Be brief.")
    assert '{"ok": <bool>}' in system["content"] and "JSON" in system["content"]
    assert user == {"role": "user", "content": "hi"}
    assert "tools" not in req.body
    usage = client.meter.snapshot()["builder"]
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 120, 7)


def test_chat_sends_tools_and_returns_tool_calls(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    tools = [{"type": "function", "function": {
        "name": "search", "description": "search memory",
        "parameters": {"type": "object", "properties": {"queries": {"type": "array"}}}}}]
    server.queue_tool_call("search", {"queries": ["dog"]}, prompt_tokens=300,
                           completion_tokens=12)

    reply = client.chat("controller", [{"role": "user", "content": "what pet?"}],
                        tools=tools, tool_choice="auto")

    body = server.requests(CHAT)[0].body
    assert body["model"] == "controller-m"
    assert body["tools"] == tools and body["tool_choice"] == "auto"
    assert "response_format" not in body
    assert reply.finish_reason == "tool_calls" and reply.model == "controller-m"
    (call,) = reply.message.tool_calls or []
    assert call.function.name == "search" and '"dog"' in call.function.arguments
    assert (reply.prompt_tokens, reply.completion_tokens) == (300, 12)
    assert set(client.meter.snapshot()) == {"controller"}


def test_each_role_uses_its_model(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    for role in ("synthesizer", "generator", "judge"):
        server.queue_chat("x")
        client.chat(role, [{"role": "user", "content": "q"}])
    assert [r.body["model"] for r in server.requests(CHAT)] == ["synth-m", "gen-m", "gen-m"]
    assert set(client.meter.snapshot()) == {"synthesizer", "generator", "judge"}


# -- ChatClient: retries -------------------------------------------------------------------


def test_retries_429_and_500_then_succeeds(server: FakeOpenAIServer, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(server, tmp_path, sleeps)
    server.queue_error(CHAT, 429, "slow down", headers={"Retry-After": "3"})
    server.queue_error(CHAT, 500, "boom")
    server.queue_chat("done", prompt_tokens=4, completion_tokens=2)

    assert client.chat("generator", [{"role": "user", "content": "q"}]).message.content == "done"
    assert len(server.requests(CHAT)) == 3
    assert len(sleeps) == 2 and sleeps[0] >= 3.0  # Retry-After honoured
    assert client.meter.snapshot()["generator"].calls == 1  # failed attempts are not billed


def test_no_retry_on_400(server: FakeOpenAIServer, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(server, tmp_path, sleeps)
    server.queue_error(CHAT, 400, "bad request: messages too long")
    server.queue_chat("never reached")

    with pytest.raises(LLMError, match=r"builder.*'builder-m'.*HTTP 400"):
        client.chat("builder", [{"role": "user", "content": "q"}])
    assert len(server.requests(CHAT)) == 1 and sleeps == []
    assert client.meter.snapshot() == {}


def test_gives_up_after_max_retries(server: FakeOpenAIServer, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = make_client(server, tmp_path, sleeps, llm_max_retries=2)
    for _ in range(3):
        server.queue_error(CHAT, 503, "overloaded")
    server.queue_chat("too late")

    with pytest.raises(LLMError, match="HTTP 503"):
        client.chat("synthesizer", [{"role": "user", "content": "q"}])
    assert len(server.requests(CHAT)) == 3 and len(sleeps) == 2
    assert sleeps[0] < sleeps[1] * 2  # exponential with jitter, nothing absurd


def test_timeout_is_retried(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path, llm_timeout_s=0.3)
    server.queue(CHAT, Reply(200, chat_body("late"), delay_s=1.5))
    server.queue_chat("on time")
    assert client.chat("generator", [{"role": "user", "content": "q"}]).message.content == "on time"
    assert len(server.requests(CHAT)) == 2


def test_connection_refused_is_retried_then_reported(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    settings = Settings(data_dir=tmp_path, llm_backend="openai", llm_max_retries=1,
                        llm_base_url=f"http://127.0.0.1:{port}/v1")
    client = ChatClient(settings, sleep=sleeps.append)
    with pytest.raises(LLMError, match="connection failed"):
        client.chat("generator", [{"role": "user", "content": "q"}])
    assert len(sleeps) == 1


# -- ChatClient: JSON handling ---------------------------------------------------------------


def test_invalid_json_raises_after_a_second_try(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    server.queue_chat("Sorry, I cannot do that.")
    server.queue_chat('{"unterminated": ')
    with pytest.raises(LLMError, match=r"builder model 'builder-m' did not return a valid JSON"):
        client.complete_json("builder", [{"role": "user", "content": "give JSON"}])
    assert len(server.requests(CHAT)) == 2
    assert client.meter.snapshot()["builder"].calls == 2  # both replies were paid for


def test_json_embedded_in_prose_is_extracted(server: FakeOpenAIServer, tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    server.queue_chat('Here you go:\n```json\n{"turns": [{"turn_number": 1}]}\n```')
    got = client.complete_json("builder", [{"role": "user", "content": "x"}])
    assert got == {"turns": [{"turn_number": 1}]}
    # No JSON in the prompt and no hint: the client adds the word JSON mode needs.
    first = server.requests(CHAT)[0].body["messages"][0]
    assert first["role"] == "system" and "JSON" in first["content"]


def test_server_without_json_mode_falls_back_to_text(server: FakeOpenAIServer,
                                                     tmp_path: Path) -> None:
    client = make_client(server, tmp_path)
    server.queue_error(CHAT, 400, "response_format is not supported by this model")
    server.queue_chat('{"a": 1}')
    server.queue_chat('{"b": 2}')
    assert client.complete_json("builder", [{"role": "user", "content": "json"}]) == {"a": 1}
    assert client.complete_json("builder", [{"role": "user", "content": "json"}]) == {"b": 2}
    first, second, third = (r.body for r in server.requests(CHAT))
    assert "response_format" in first
    assert "response_format" not in second and "response_format" not in third


def test_extract_json_object_edge_cases() -> None:
    assert extract_json_object('[1, 2] then {"x": {"y": 1}}') == {"x": {"y": 1}}
    assert extract_json_object("{not json} {\"k\": 2}") == {"k": 2}
    assert extract_json_object("[1, 2]") is None
    assert extract_json_object("") is None


# -- OpenAIBuilder -------------------------------------------------------------------------


def make_builder(server: FakeOpenAIServer, tmp_path: Path, **overrides: Any) -> OpenAIBuilder:
    settings = make_settings(server, tmp_path, **overrides)
    return OpenAIBuilder(settings, client=ChatClient(settings, UsageMeter(), sleep=lambda s: None))


def test_builder_version_names_model_and_prompt(server: FakeOpenAIServer, tmp_path: Path) -> None:
    assert make_builder(server, tmp_path).version == "openai:builder-m:p1"
    # The summary and input limits change the output, so they change the version.
    changed = make_builder(server, tmp_path, l0_max_summary_words=20, l1_max_input_chars=5000,
                           l0_max_window_chars=3000)
    assert changed.version == "openai:builder-m:p1:w20:c3000:i5000"


def test_l0_parse_enforces_limits_and_drops_bad_turns(server: FakeOpenAIServer,
                                                      tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path)
    turns = [turn(3, "Yesterday I went to a support group."),
             turn(4, "I adopted a puppy named Oscar last week."),
             turn(5, "We are painting the nursery."),
             turn(6, "Any book tips?")]
    long_summary = " ".join(f"w{i}" for i in range(40))
    server.queue_json({"turns": [
        {"turn_number": 3, "summary": "context turn", "keywords": [], "tags": []},
        {"turn_number": 4, "summary": long_summary,
         "keywords": [f"k{i}" for i in range(12)] + ["k1", "K1"],
         "tags": ["pets", "Pets", "family", "dogs", "home", "news", "extra"]},
        {"turn_number": "5", "summary": "Caroline painted the nursery on 2023-05-08.",
         "keywords": "painting, nursery , ", "tags": ["home"]},
        {"turn_number": 99, "summary": "hallucinated"},
    ]}, prompt_tokens=500, completion_tokens=90)

    window = Window(meta=META, turns=turns, targets=[4, 5, 6])
    out = builder.summarize_window(window)

    assert [s.turn_index for s in out] == [4, 5, 6]
    four, five, six = out
    assert four.summary.split() == long_summary.split()[:30]
    assert four.keywords == [f"k{i}" for i in range(8)]
    assert four.tags == ["pets", "family", "dogs", "home", "news"]
    assert five.keywords == ["painting", "nursery"]
    assert six.summary.startswith("Caroline: Any book tips?")  # model skipped it: extract
    assert six.keywords == []

    body = server.requests(CHAT)[0].body
    assert body["model"] == "builder-m" and body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert "30 words" in system["content"]
    assert "Session date: 2023-05-08 (Monday)" in user["content"]
    assert "[Turn 3 | CONTEXT]" in user["content"] and "[Turn 6 | TARGET]" in user["content"]
    assert "Caroline: I adopted a puppy named Oscar last week." in user["content"]
    assert builder._client.meter.snapshot()["builder"].prompt_tokens == 500


def test_l0_window_is_clipped_proportionally(server: FakeOpenAIServer, tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path, l0_max_window_chars=500)
    turns = [turn(1, "a" * 900, "b" * 300), turn(2, "c" * 300, "d" * 100)]
    server.queue_json({"turns": [{"turn_number": 2, "summary": "s", "keywords": [], "tags": []}]})
    builder.summarize_window(Window(meta=META, turns=turns, targets=[2]))
    user = server.requests(CHAT)[0].body["messages"][1]["content"]
    counts = {ch: user.count(ch * 10) * 10 for ch in "abcd"}
    assert sum(user.count(ch) for ch in "abcd") <= 500 + 40  # + letters of the prompt itself
    # Same ratio for every message: 900:300:300:100 survives.
    assert counts["a"] > counts["b"] and abs(counts["b"] - counts["c"]) <= 10 and counts["d"] > 0


def test_l1_facts_validated(server: FakeOpenAIServer, tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path)
    turns = [turn(1, "I adopted a puppy."), turn(2, "I live in Boston.")]
    facts = [{"text": "- Caroline adopted a puppy on 2023-05-01.", "turns": [1, 77]},
             {"text": "Caroline adopted a puppy on 2023-05-01.", "turns": [1]},  # duplicate
             {"text": "Caroline lives in Boston.", "turns": ["2"]},
             {"text": "  ", "turns": [1]},
             "Melanie likes painting."]
    facts += [{"text": f"Filler fact {i}.", "turns": [2]} for i in range(30)]
    server.queue_json({"facts": facts})

    out = builder.key_facts(META, turns)

    assert len(out) == 25
    assert out[0].text == "Caroline adopted a puppy on 2023-05-01." and out[0].turn_indices == [1]
    assert out[1].text == "Caroline lives in Boston." and out[1].turn_indices == [2]
    assert out[2].text == "Melanie likes painting." and out[2].turn_indices == []
    user = server.requests(CHAT)[0].body["messages"][1]["content"]
    assert "[Turn 1]" in user and "Caroline: I live in Boston." in user


def test_l1_input_is_capped(server: FakeOpenAIServer, tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path, l1_max_input_chars=1000)
    turns = [turn(i, "x" * 2000, "y" * 2000) for i in range(1, 4)]
    server.queue_json({"facts": [{"text": "Caroline types a lot.", "turns": [1]}]})
    builder.key_facts(META, turns)
    user = server.requests(CHAT)[0].body["messages"][1]["content"]
    assert user.count("x") + user.count("y") <= 1000


def test_l2_notes_per_turn(server: FakeOpenAIServer, tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path)
    turns = [turn(1, "I adopted a puppy named Oscar."), turn(2, "He chewed my shoes."),
             turn(3, "Any tips?")]
    server.queue_json({"turns": [
        {"turn_number": 2, "notes": ["Oscar chewed Caroline's shoes.", ""]},
        {"turn_number": 1, "notes": ["- Caroline adopted a puppy.", "The puppy is named Oscar.",
                                     "The puppy is named Oscar."]},
        {"turn_number": 8, "notes": ["ghost"]},
    ]})

    notes = builder.turn_notes(META, turns)

    assert [n.turn_index for n in notes] == [1, 2, 3]
    assert notes[0].bullets == ["Caroline adopted a puppy.", "The puppy is named Oscar."]
    assert notes[1].bullets == ["Oscar chewed Caroline's shoes."]
    assert notes[2].bullets[0].startswith("Caroline said: Any tips?")  # fallback
    assert all("ghost" not in b for n in notes for b in n.bullets)


def test_l2_long_session_is_split_not_clipped(server: FakeOpenAIServer, tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path, l1_max_input_chars=1000)
    turns = [turn(i, f"turn{i} " + "z" * 400) for i in range(1, 6)]

    def reply(body: dict[str, Any]) -> Reply:
        user = body["messages"][1]["content"]
        numbers = [i for i in range(1, 6) if f"[Turn {i}]" in user]
        items = [{"turn_number": n, "notes": [f"note {n}"]} for n in numbers]
        return Reply(200, chat_body(json.dumps({"turns": items})))

    server.set_fallback(CHAT, reply)
    notes = builder.turn_notes(META, turns)
    assert [n.bullets for n in notes] == [[f"note {i}"] for i in range(1, 6)]
    assert len(server.requests(CHAT)) == 3  # 2 + 2 + 1 turns of ~420 chars each
    assert all("z" * 400 in r.body["messages"][1]["content"] for r in server.requests(CHAT))


def test_builder_surfaces_llm_errors(server: FakeOpenAIServer, tmp_path: Path) -> None:
    builder = make_builder(server, tmp_path)
    server.queue_error(CHAT, 401, "invalid api key")
    with pytest.raises(LLMError, match="HTTP 401"):
        builder.key_facts(META, [turn(1, "hi")])


# -- OpenAIEmbedder -----------------------------------------------------------------------------


def normalised(text: str, dim: int) -> np.ndarray:
    v = np.asarray(fake_vector(text, dim), dtype=np.float32)
    return v / np.linalg.norm(v)


def test_embedder_batches_normalises_and_keeps_order(tmp_path: Path) -> None:
    with FakeOpenAIServer(embed_dim=8, reverse_embeddings=True) as server:
        emb = OpenAIEmbedder(make_settings(server, tmp_path, embed_batch_size=2),
                             sleep=lambda s: None)
        texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
        server.queue_error(EMB, 503, "warming up")
        vecs = emb.embed_documents(texts)

        assert vecs.shape == (5, 8) and vecs.dtype == np.float32 and emb.dim == 8
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
        for text, vec in zip(texts, vecs, strict=True):
            np.testing.assert_allclose(vec, normalised(text, 8), atol=1e-6)
        reqs = server.requests(EMB)
        assert len(reqs) == 4  # one 503 retried, then 3 batches of 2, 2, 1
        assert [r.body["input"] for r in reqs[1:]] == [["alpha", "beta"], ["gamma", "delta"],
                                                       ["epsilon"]]
        assert all(r.body["model"] == "embed-m" and r.body["encoding_format"] == "float"
                   and "dimensions" not in r.body for r in reqs)
        assert emb.embed_documents([]).shape == (0, 8)


def test_embedder_dimensions_setting(server: FakeOpenAIServer, tmp_path: Path) -> None:
    emb = OpenAIEmbedder(make_settings(server, tmp_path, embed_dim=16))
    assert emb.embed_query("hello").shape == (16,)
    assert server.requests(EMB)[0].body["dimensions"] == 16

    server.queue(EMB, Reply(200, {"object": "list", "model": "m", "data": [
        {"object": "embedding", "index": 0, "embedding": [1.0] * 12}]}))
    with pytest.raises(EmbedError, match=r"12-dimensional.*MEMSTRATA_EMBED_DIM"):
        emb.embed_documents(["x"])


def test_embedder_dim_probe_and_no_retry_on_4xx(server: FakeOpenAIServer, tmp_path: Path) -> None:
    emb = OpenAIEmbedder(make_settings(server, tmp_path), sleep=lambda s: None)
    assert emb.dim == 8 and len(server.requests(EMB)) == 1
    server.queue_error(EMB, 404, "model not found")
    with pytest.raises(EmbedError, match=r"'embed-m'.*HTTP 404"):
        emb.embed_documents(["x"])
    assert len(server.requests(EMB)) == 2


# -- factories -------------------------------------------------------------------------------


def test_factories_pick_the_openai_backends(server: FakeOpenAIServer, tmp_path: Path) -> None:
    settings = make_settings(server, tmp_path)
    meter = UsageMeter()
    builder = open_builder(settings, meter)
    # The LLM builder comes wrapped so that its failures fall back to the extractive one.
    assert isinstance(builder, FallbackBuilder) and isinstance(builder.primary, OpenAIBuilder)
    assert builder.version == "openai:builder-m:p1"
    assert isinstance(open_embedder(settings), OpenAIEmbedder)
    server.queue_json({"facts": [{"text": "Caroline said hi.", "turns": [1]}]})
    builder.key_facts(META, [turn(1, "hi")])
    assert meter.snapshot()["builder"].calls == 1  # the meter handed in is the one used


def test_factory_extractive_default(tmp_path: Path) -> None:
    extractive = pytest.importorskip("memstrata.llm.extractive")
    builder = open_builder(Settings(data_dir=tmp_path))
    assert isinstance(builder, extractive.ExtractiveBuilder)
