"""``memstrata ask`` against a REAL llama-server (Gemma 3 270M) ends within its time budget.

Issue 34: on this 2-core machine ``ask`` was still running after 5 minutes,
each LLM step failing soft after its own timeout. Here the per-call limits are
generous (two minutes) and the controller may take 20 steps, so only the
answer's budget (a few seconds) can stop it in time; the answer is then given
offline and marked, or by the model if it was quick enough.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory
from tests.support.llama_server import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
BUDGET_S = 8.0
#: The offline answer after the LLM path gave way, beyond its reserve: in a fresh process
#: its first search loads the query encoder (2-4 s on a busy 2-core machine, with
#: llama-server still working on the abandoned request). Measured: 7.8-10.5 s for 8 s.
SLACK_S = 4.0
#: Starting the command (interpreter, imports, the encoder) before the answer begins.
START_S = 60.0


def test_ask_against_llama_server_answers_within_its_budget(llama: LlamaServer,
                                                            tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Memory.open(Settings(data_dir=data)) as memory:  # L0 built offline: quick
        memory.ingest(read_file(SAMPLE).sessions)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMSTRATA_")}
    env.update({
        "MEMSTRATA_DATA_DIR": str(data),
        "MEMSTRATA_LLM_BACKEND": "openai",
        "MEMSTRATA_LLM_BASE_URL": llama.base_url,
        **{f"MEMSTRATA_LLM_MODEL_{r}": llama.alias
           for r in ("BUILDER", "CONTROLLER", "SYNTHESIZER", "GENERATOR")},
        "MEMSTRATA_LLM_TIMEOUT_S": "120",
        "MEMSTRATA_LLM_MAX_RETRIES": "0",
        "MEMSTRATA_LLM_MAX_TOKENS_CONTROLLER": "256",
        "MEMSTRATA_CONTROLLER_ANSWER_BUDGET_S": str(BUDGET_S),
    })
    t0 = time.monotonic()
    asked = subprocess.run([sys.executable, "-m", "memstrata", "ask", "--tenant", "acme",
                            "--user", "maya", "--json", "What is the name of my dog?"],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    wall = time.monotonic() - t0
    assert asked.returncode == 0, asked.stderr[-3000:]
    answer = json.loads(asked.stdout)
    took_s = answer["summary"]["ms_total"] / 1000
    print(f"answered in {took_s:.1f} s ({wall:.1f} s with the command's start), "
          f"mode {answer['mode']}, fallback {answer['fallback']}: {answer['answer']!r}; "
          f"slowest steps: {sorted(((s['ms'], s['tool']) for s in answer['steps']))[-3:]}")
    assert took_s < BUDGET_S + SLACK_S
    assert wall < BUDGET_S + SLACK_S + START_S
    assert answer["answer"].strip()
    if answer["fallback"] is not None:  # the model could not finish: offline, and marked
        assert answer["mode"] == "offline-extractive"
        assert answer["steps"][0]["tool"] == "llm-fallback"
        assert "answered offline" in asked.stderr
