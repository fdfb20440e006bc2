"""The LLM path against a REAL llama-server serving Gemma 3 270M.

Gemma 270M answers badly; these tests check robustness, never quality: an
ingest with ``MEMSTRATA_LLM_BACKEND=openai`` completes and stores every turn
(built by the model, or by the extractive fallback and marked so), ``ask``
answers (with the model, or offline and marked), and stopping the server in
the middle of an ingest loses nothing: the rest is built by the fallback,
marked and counted. Output caps are kept small so the whole module stays
well under a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.ingest.formats import read_file
from memstrata.llm.factory import open_builder
from memstrata.llm.metrics import register_llm_metrics
from memstrata.llm.types import FAILURE_REASONS
from memstrata.llm.usage import UsageMeter
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from tests.support import llama_server
from tests.support.llama_server import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")


def llm_env(server: LlamaServer, data_dir: Path) -> dict[str, str]:
    """The variables a user would set to point memstrata at a local llama-server."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMSTRATA_")}
    env.update({
        "MEMSTRATA_DATA_DIR": str(data_dir),
        "MEMSTRATA_LLM_BACKEND": "openai",
        "MEMSTRATA_LLM_BASE_URL": server.base_url,
        "MEMSTRATA_LLM_MODEL_BUILDER": server.alias,
        "MEMSTRATA_LLM_MODEL_CONTROLLER": server.alias,
        "MEMSTRATA_LLM_MODEL_SYNTHESIZER": server.alias,
        "MEMSTRATA_LLM_MODEL_GENERATOR": server.alias,
        # Small caps and time limits keep the test short (Gemma runs at a few tokens/s
        # on a busy 2-core machine); a reply cut off or too slow falls back, marked.
        "MEMSTRATA_LLM_MAX_TOKENS_BUILDER": "96",
        "MEMSTRATA_LLM_MAX_TOKENS_CONTROLLER": "32",
        "MEMSTRATA_LLM_MAX_TOKENS_SYNTHESIZER": "32",
        "MEMSTRATA_LLM_MAX_TOKENS_GENERATOR": "32",
        "MEMSTRATA_LLM_TIMEOUT_S": "15",
        "MEMSTRATA_LLM_MAX_RETRIES": "0",
        "MEMSTRATA_LLM_BREAKER_FAILURES": "1",
        "MEMSTRATA_CONTROLLER_MAX_STEPS": "1",
        # The profile read is one more model call per session (+13 s here); its real-server
        # path is covered by tests/integration/llm/test_profiles_llama.py.
        "MEMSTRATA_PROFILES": "false",
    })
    return env


def subset(tmp: Path, sessions: int) -> Path:
    """The README's example file cut to its first ``sessions`` sessions (fewer LLM calls)."""
    kept: list[str] = []
    seen: list[str] = []
    for line in SAMPLE.read_text().splitlines():
        sid = json.loads(line)["session_id"]
        if sid not in seen:
            seen.append(sid)
        if len(seen) <= sessions:
            kept.append(line)
    path = tmp / "sample_subset.jsonl"
    path.write_text("\n".join(kept) + "\n")
    return path


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memstrata", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=240)


@pytest.fixture(scope="module")
def ingested(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[dict[str, str], subprocess.CompletedProcess[str]]]:
    """The README's example file ingested through the real CLI, once for the module."""
    tmp = tmp_path_factory.mktemp("llm-data")
    env = llm_env(llama, tmp / "data")
    yield env, cli(env, "ingest", str(subset(tmp, 2)))


def test_cli_ingest_with_llama_server_completes(
        ingested: tuple[dict[str, str], subprocess.CompletedProcess[str]]) -> None:
    env, result = ingested
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 sessions read, 2 ingested (5 turns, 5 L0 units)" in result.stdout
    settings = Settings(data_dir=Path(env["MEMSTRATA_DATA_DIR"]))
    docs = open_doc_store(settings, read_only=True)
    try:
        units = [u for meta in docs.list_sessions(MAYA)
                 for u in docs.session_units(MAYA, meta.session_id)]
    finally:
        docs.close()
    assert len(units) == 5  # maya's first two sessions: 3 + 2 turns
    assert all(u.summary.strip() for u in units)
    assert {u.fallback for u in units} <= {None, *FAILURE_REASONS}
    built_by_llm = [u for u in units if u.fallback is None]
    print(f"{len(built_by_llm)} of {len(units)} units built by Gemma; fallbacks: "
          f"{sorted(str(u.fallback) for u in units if u.fallback)}")


def test_cli_ask_answers_with_llama_server(
        ingested: tuple[dict[str, str], subprocess.CompletedProcess[str]]) -> None:
    env, result = ingested
    assert result.returncode == 0, result.stderr[-3000:]
    asked = cli(env, "ask", "--tenant", "acme", "--user", "maya", "--json",
                "Which seafood place did my sister like?")
    assert asked.returncode == 0, asked.stderr[-3000:]
    answer = json.loads(asked.stdout)
    assert answer["answer"].strip()
    if answer["fallback"] is None:
        assert answer["mode"] == "llm"
        assert any(s["tool"].startswith("llm:") for s in answer["steps"])  # Gemma was asked
    else:  # the model failed: answered offline, and the answer says so
        assert answer["mode"] == "offline-extractive"
        assert answer["steps"][0]["tool"] == "llm-fallback"
        assert "answered offline" in asked.stderr


def test_server_stopped_mid_ingest_loses_nothing(
        llama_paths: tuple[Path, Path], tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    binary, model = llama_paths
    server = llama_server.start(binary, model, tmp_path / "llama-server.log")
    try:
        env = llm_env(server, tmp_path / "data")
        values: dict[str, Any] = {k[len("MEMSTRATA_"):].lower(): v for k, v in env.items()
                                  if k.startswith("MEMSTRATA_")
                                  and not k.startswith("MEMSTRATA_CONTROLLER_")}
        # Let the refused connections be seen (not only the breaker that they open).
        settings = Settings(**{**values, "llm_breaker_failures": 3})
        meter = UsageMeter()
        memory = Memory(settings, open_builder(settings, meter), embedder,
                        open_vector_store(settings, embedder.dim), open_lexical_store(settings),
                        open_doc_store(settings), meter)
        sessions = read_file(subset(tmp_path, 3)).sessions

        def stop_after_first(_turns: int) -> None:
            server.stop()  # the first session was built with the server up

        try:
            report = memory.ingest(sessions, progress=stop_after_first)
            assert not server.alive()
            assert report.committed == len(sessions) == 3
            stored = {s.session_id: memory.l0(s.scope, s.session_id) for s in sessions}
            assert {sid: len(units) for sid, units in stored.items()} == {
                s.session_id: len(s.turns) for s in sessions}
            after = [u for s in sessions[1:] for u in stored[s.session_id]]
            assert after and all(u.fallback in ("connection", "unavailable") for u in after)
            # The first window was sent while the server was up: built, or failed otherwise.
            first = stored[sessions[0].session_id]
            assert all(u.fallback not in ("connection", "unavailable") for u in first)
            counted = meter.fallbacks()
            assert sum(n for (role, _), n in counted.items() if role == "builder") >= 2
            assert counted.get(("builder", "connection"), 0) >= 1
            registry = CollectorRegistry()
            register_llm_metrics(registry, meter)
            assert 'memstrata_llm_fallbacks_total{reason="connection",role="builder"}' in \
                generate_latest(registry).decode()
            # Those sessions are not "done": the next ingest builds them again.
            assert memory.ingest(sessions[1:]).unchanged == 0
        finally:
            memory.close()
    finally:
        server.stop()
