"""``memstrata ingest`` prints what building memory cost (issue 34: the whole cost).

The builder model is :class:`FakeOpenAIServer`, a scripted TEST DOUBLE of an
OpenAI-compatible endpoint on a real socket that writes L0 entries and counts
the calls; the ingest is the real command in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
CHAT = FakeOpenAIServer.CHAT
PROMPT_TOKENS, COMPLETION_TOKENS = 200, 30


def l0_reply(body: dict[str, Any]) -> Reply:
    """One entry for every turn the window asks for."""
    found = re.search(r"Write entries for turns: ([\d, ]+)", str(body["messages"][-1]["content"]))
    turns = [int(n) for n in found.group(1).split(",")] if found else []
    data = {"turns": [{"turn_number": n, "summary": f"LLM summary of turn {n}.",
                       "keywords": ["kw"], "tags": ["t"]} for n in turns]}
    return Reply(200, chat_body(json.dumps(data), prompt_tokens=PROMPT_TOKENS,
                                completion_tokens=COMPLETION_TOKENS, model="builder-m"))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embed_dim=8) as srv:
        srv.set_fallback(CHAT, l0_reply)
        yield srv


def test_ingest_prints_the_construction_tokens_and_cost(server: FakeOpenAIServer,
                                                        tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"builder-m": {"input_per_mtok": 1.0,
                                                           "output_per_mtok": 4.0}}}))
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMSTRATA_")}
    env.update({"MEMSTRATA_DATA_DIR": str(tmp_path / "data"),
                "MEMSTRATA_LLM_BACKEND": "openai", "MEMSTRATA_LLM_BASE_URL": server.base_url,
                "MEMSTRATA_LLM_MODEL_BUILDER": "builder-m", "MEMSTRATA_LLM_MAX_RETRIES": "0",
                "MEMSTRATA_CONTROLLER_PRICE_TABLE": str(prices)})
    done = subprocess.run([sys.executable, "-m", "memstrata", "ingest", "-v", str(SAMPLE)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    n = len(server.requests(CHAT))
    assert n > 0
    usd = n * (PROMPT_TOKENS * 1.0 + COMPLETION_TOKENS * 4.0) / 1e6
    assert (f"construction: {n} builder calls, {n * PROMPT_TOKENS} tokens in / "
            f"{n * COMPLETION_TOKENS} out, ${usd:.6f}") in done.stdout
    # -v: one line per session that called the builder; together they are the total.
    per_session = re.findall(r"construction \w+/\w+/(\S+): (\d+) builder call", done.stdout)
    sessions = {json.loads(line)["session_id"] for line in SAMPLE.read_text().splitlines()}
    assert {sid for sid, _ in per_session} == sessions
    assert sum(int(calls) for _, calls in per_session) == n

    # Ingesting the same file again builds nothing, and says so.
    server.clear_requests()
    again = subprocess.run([sys.executable, "-m", "memstrata", "ingest", str(SAMPLE)],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.requests(CHAT) == []
    assert "construction: 0 builder calls, 0 tokens in / 0 out" in again.stdout
