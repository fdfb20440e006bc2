"""``memstrata ask`` and ``memstrata eval qa`` as a user runs them (real subprocesses).

Offline first; then ``eval qa`` with MEMSTRATA_LLM_BACKEND=openai against
FakeOpenAIServer (a TEST DOUBLE of an OpenAI-compatible endpoint), to show
that the same command runs the LLM controller, notes, generator and judge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body, tool_call

ROOT = Path(__file__).resolve().parents[2]

LOCOMO = [{
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1",
             "text": "I adopted a grey kitten yesterday and named her Pixel."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Pixel is a cute name! Congrats."},
            {"speaker": "Ana", "dia_id": "D1:3",
             "text": "Thanks! I also signed up for a pottery class at the Clay Studio."},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "Pottery is so relaxing."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1",
             "text": "I ran my first marathon in Berlin last Sunday!"},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Amazing, how did it feel?"},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "Exhausting but worth every step."},
        ],
    },
    "qa": [
        {"question": "What did Ana name her kitten?", "answer": "Pixel",
         "evidence": ["D1:1"], "category": 4},
        {"question": "When did Ana adopt a kitten?", "answer": "7 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "Where did Ben run his first marathon?", "answer": "Berlin",
         "evidence": ["D2:1"], "category": 4},
        {"question": "Where did Ana run her first marathon?", "adversarial_answer": "Berlin",
         "evidence": ["D2:1"], "category": 5},
    ],
}]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memstrata", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=240)


def test_ask_prints_answer_sources_and_trace(tmp_path: Path,
                                            sample_copy: Callable[[Path], Path]):
    env = {"MEMSTRATA_DATA_DIR": str(sample_copy(tmp_path))}  # the sample, ingested
    r = run("ask", "--tenant", "acme", "--user", "maya", "--trace",
            "When did I go to Porto?", "--date", "2024-06-01", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "2023"  # "last year", said in March 2024
    assert "source: 2024-03-02-trip (2024-03-02) turn 2" in r.stdout
    for word in ("search", "read_facts", "deepest layer", "sessions drilled", "tokens in/out"):
        assert word in r.stdout
    r = run("ask", "--tenant", "acme", "--user", "maya", "--json", "--without", "reflect",
            "Where did I go last year?", env=env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["summary"]["ablations"] == ["reflect"] and data["steps"]
    r = run("ask", "--user", "maya", "--without", "nothing", "x", env=env)
    assert r.returncode == 2 and "unknown ablation 'nothing'" in r.stderr
    r = run("ask", "--user", "maya", "--date", "soonish", "x", env=env)
    assert r.returncode == 2 and "--date" in r.stderr


def test_eval_qa_offline_writes_results_and_depth_plot(tmp_path: Path):
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(LOCOMO))
    out = tmp_path / "out" / "results.json"
    r = run("eval", "qa", "--dataset", str(data), "--format", "locomo", "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert "depth distribution" in r.stdout and "haystack" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["config"]["mode"] == "offline-extractive" and not doc["config"]["judge"]
    res = {x["question"]: x for x in doc["results"]}
    assert res["What did Ana name her kitten?"]["prediction"] == "Pixel"
    assert res["What did Ana name her kitten?"]["f1"] == 1.0
    assert res["When did Ana adopt a kitten?"]["prediction"] == "7 May 2023"
    assert res["Where did Ben run his first marathon?"]["prediction"] == "Berlin"
    assert res["Where did Ana run her first marathon?"]["abstained"]  # Ben ran it, not Ana
    report = doc["report"]
    assert report["overall"]["n"] == 3 and report["overall"]["f1"] == 1.0
    assert report["by_category"]["adversarial"]["f1"] == 1.0
    assert sum(report["depth_distribution"].values()) == 1.0
    assert (out.parent / "results.depth.png").read_bytes()[:4] == b"\x89PNG"
    r = run("eval", "qa", "--dataset", str(data), "--format", "csv")
    assert r.returncode == 2 and "--format" in r.stderr


def _fake_llm(body: dict[str, Any]) -> Reply:
    """Answers any request of any role the way a cooperative model would."""
    model, msgs = body["model"], body["messages"]
    last = str(msgs[-1].get("content") or "")
    if model == "bld-m":  # layer building: give nothing, the builder falls back to extracts
        return Reply(200, chat_body('{"turns": [], "facts": []}'))
    if model == "ctl-m":
        if body.get("tool_choice") == "auto" and not any(m["role"] == "tool" for m in msgs):
            question = msgs[1]["content"].split(": ", 1)[1]
            return Reply(200, chat_body(None, tool_calls=[
                tool_call("search", {"queries": [question]}, "call_s")]))
        if body.get("tool_choice") == "auto" and msgs[-1]["role"] == "tool" and \
                "is_sufficient" not in last:
            return Reply(200, chat_body(None, tool_calls=[tool_call("reflect", {}, "call_r")]))
        if "new_queries" in last and "tools" not in body:
            return Reply(200, chat_body(json.dumps(
                {"is_sufficient": True, "items_found_so_far": [], "potential_gaps": "",
                 "new_queries": []})))
        return Reply(200, chat_body("draft"))
    if model == "syn-m":
        return Reply(200, chat_body("RELEVANT FACTS: see evidence"))
    if "yes or no" in last:
        return Reply(200, chat_body("yes"))
    return Reply(200, chat_body(json.dumps({"reasoning": "r", "answer": "Pixel"})))


def test_eval_qa_runs_the_llm_controller_when_an_endpoint_is_configured(tmp_path: Path):
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(LOCOMO))
    out = tmp_path / "llm.json"
    with FakeOpenAIServer() as server:
        server.set_fallback(server.CHAT, _fake_llm)
        env = {"MEMSTRATA_LLM_BACKEND": "openai", "MEMSTRATA_LLM_BASE_URL": server.base_url,
               "MEMSTRATA_LLM_API_KEY": "sk-test", "MEMSTRATA_LLM_MODEL_BUILDER": "bld-m",
               "MEMSTRATA_LLM_MODEL_CONTROLLER": "ctl-m",
               "MEMSTRATA_LLM_MODEL_SYNTHESIZER": "syn-m",
               "MEMSTRATA_LLM_MODEL_GENERATOR": "gen-m", "MEMSTRATA_LLM_MAX_RETRIES": "0"}
        r = run("eval", "qa", "--dataset", str(data), "--format", "locomo", "--output",
                str(out), "--limit", "2", env=env)
        models = [req.body["model"] for req in server.requests(server.CHAT)]
        auth = {req.headers.get("authorization") for req in server.requests(server.CHAT)}
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["config"]["mode"] == "llm" and doc["config"]["judge"]
    assert doc["config"]["models"]["judge"] == "gen-m"
    assert [x["prediction"] for x in doc["results"]] == ["Pixel", "Pixel"]
    assert doc["results"][0]["judge"] is True and doc["results"][0]["f1"] == 1.0
    assert doc["report"]["overall"]["judge_accuracy"] == 1.0
    summary = doc["results"][0]["summary"]
    assert summary["policy"] == "llm" and summary["reflections"] == 1
    assert summary["tokens"]["controller"]["calls"] >= 3
    assert {"ctl-m", "syn-m", "gen-m", "bld-m"} <= set(models)
    assert auth == {"Bearer sk-test"}
    assert "judge acc." in r.stdout
