"""Build once, read many; and the whole cost of an answer (issue 34).

``memstrata ask`` opens memory read-only. It used to build L1/L2 without
caching them, so two identical asks with an LLM builder built the same L1
again and again, and the builder tokens an answer caused were left out of its
cost. Here two real ``memstrata ask`` processes read the same data dir with
the builder on :class:`FakeOpenAIServer` (a scripted TEST DOUBLE of an
OpenAI-compatible endpoint, on a real socket, that counts the calls): the
first builds each layer it reads once and pays for it, the second builds
nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.llm import prompts
from tests.support.conversation import open_memory
from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHAT = FakeOpenAIServer.CHAT
PROMPT_TOKENS, COMPLETION_TOKENS = 321, 45
IN_PER_MTOK, OUT_PER_MTOK = 2.0, 10.0


def kind(body: dict[str, Any]) -> str:
    """Which layer a builder request asks for (by the reply shape its prompt names)."""
    system = str(body["messages"][0]["content"])
    return "L1" if prompts.L1_SHAPE in system else "L2" if prompts.L2_SHAPE in system else "?"


def session_of(body: dict[str, Any]) -> str:
    """The session a request is about (its turns' text names it well enough)."""
    text = str(body["messages"][-1]["content"])
    for marker, sid in (("Lisbon in May", "s1"), ("half marathon", "s2"), ("Pixel", "s3"),
                        ("Orbit Labs", "s4")):
        if marker in text:
            return sid
    return "?"


def builder_reply(body: dict[str, Any]) -> Reply:
    """L1 facts or L2 notes, as a builder model would write them."""
    if kind(body) == "L1":
        data: dict[str, Any] = {"facts": [{"text": f"LLM fact about {session_of(body)}",
                                           "turns": [1]}]}
    else:
        data = {"turns": [{"turn_number": n, "notes": [f"LLM note {n}"]} for n in (1, 2)]}
    return Reply(200, chat_body(json.dumps(data), prompt_tokens=PROMPT_TOKENS,
                                completion_tokens=COMPLETION_TOKENS, model="builder-m"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embed_dim=8) as srv:
        srv.set_fallback(CHAT, builder_reply)
        yield srv


def ask(env: dict[str, str], question: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "memstrata", "ask", "--tenant", "acme",
                           "--user", "maya", "--json", question], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_read_only_ask_builds_each_layer_once_and_pays_for_it(
        server: FakeOpenAIServer, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    open_memory(tmp_path / "data", embedder).close()  # L0 built offline
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"builder-m": {
        "input_per_mtok": IN_PER_MTOK, "output_per_mtok": OUT_PER_MTOK}}}))
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMSTRATA_")}
    env.update({
        "MEMSTRATA_DATA_DIR": str(tmp_path / "data"),
        "MEMSTRATA_LLM_BACKEND": "openai", "MEMSTRATA_LLM_BASE_URL": server.base_url,
        "MEMSTRATA_LLM_MODEL_BUILDER": "builder-m", "MEMSTRATA_LLM_MAX_RETRIES": "0",
        "MEMSTRATA_CONTROLLER_POLICY": "rules",  # only the builder uses the model
        "MEMSTRATA_CONTROLLER_PRICE_TABLE": str(prices),
    })
    question = "What is the name of my kitten?"

    first = ask(env, question)
    built = Counter((kind(r.body), session_of(r.body)) for r in server.requests(CHAT))
    assert built and "?" not in {k for k, _ in built}
    assert set(built.values()) == {1}, built  # no layer was built twice in one answer
    reads = [s for s in first["steps"] if s["tool"] in ("read_facts", "read_turns")]
    assert reads and all(s["cached"] is not None for s in reads)
    assert any(s["cached"] is False for s in reads)
    # The builds this answer caused are in its cost, booked to the builder role.
    calls = sum(built.values())
    tokens = first["summary"]["tokens"]["builder"]
    assert (tokens["calls"], tokens["tokens_in"], tokens["tokens_out"]) == (
        calls, calls * PROMPT_TOKENS, calls * COMPLETION_TOKENS)
    per_call = (PROMPT_TOKENS * IN_PER_MTOK + COMPLETION_TOKENS * OUT_PER_MTOK) / 1e6
    assert first["summary"]["cost_usd"] == pytest.approx(calls * per_call)
    assert sum(1 for s in first["steps"] if s["tool"] == "llm:builder") == calls

    # A second process asks the same: every layer comes from the cache, nothing is built.
    server.clear_requests()
    second = ask(env, question)
    assert server.requests(CHAT) == []
    again = [s for s in second["steps"] if s["tool"] in ("read_facts", "read_turns")]
    assert [s["sessions"] for s in again] == [s["sessions"] for s in reads]
    assert again and all(s["cached"] is True for s in again)
    assert "builder" not in second["summary"]["tokens"]
    assert second["summary"]["cost_usd"] == 0.0
    assert second["answer"] == first["answer"]


def test_a_layer_the_cache_refuses_is_still_built_once_per_process(
        tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    from memstrata.config import Settings
    from memstrata.layers.lazy import LazyLayers
    from memstrata.llm.budget import AnswerBudget, within
    from memstrata.llm.extractive import ExtractiveBuilder
    from memstrata.store.sqlite_docs import SqliteDocStore
    from memstrata.store.types import StoreError
    from tests.support.conversation import MAYA

    open_memory(tmp_path / "data", embedder).close()
    docs = SqliteDocStore(Settings(data_dir=tmp_path / "data").docs_path, read_only=True)
    opened: list[int] = []

    def refuse() -> SqliteDocStore:  # a data dir this process may not write
        opened.append(1)
        raise StoreError("sqlite: attempt to write a readonly database")

    layers = LazyLayers(docs, ExtractiveBuilder(), writer=refuse)
    try:
        with within(AnswerBudget(None)) as answer:
            hits = [layers.facts(MAYA, "s3-back-home")[1] for _ in range(3)]
            hits.append(layers.notes(MAYA, "s3-back-home")[1])
            hits.append(layers.notes(MAYA, "s3-back-home")[1])
            _, reads = answer.take()
        assert hits == [False, True, True, False, True]
        assert layers.builds == 2  # one L1, one L2: each built once, then kept in the memo
        assert [r.source for r in reads] == ["built", "memo", "memo", "built", "memo"]
        assert opened == [1]  # a store that refused is not asked again
        assert docs.get_layer(MAYA, "s3-back-home", "L1", ExtractiveBuilder().version) is None
    finally:
        layers.close()
        docs.close()
