"""The QA protocol end to end: the system beside the full-context and L3-only RAG baselines.

Offline on the LoCoMo-format fixture (extractive answers over each context);
with an LLM on the LongMemEval-format fixture, where FakeOpenAIServer (a TEST
DOUBLE of an OpenAI-compatible endpoint) plays a cooperative controller and
synthesizer, a generator that answers only when the evidence it needs is in
the context it was given, and a judge; and ``memstrata eval qa`` as a user
runs it on an install without matplotlib.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.eval.baselines import FULL_CONTEXT, RAG_L3, BaselineSettings, run_baselines
from memstrata.eval.datasets import load_dataset
from memstrata.eval.errors import error_kind, read_sessions
from memstrata.eval.judge_prompts import RULES
from memstrata.eval.protocol import extend_report, side_by_side
from memstrata.eval.qa import normalize_answer
from memstrata.eval.qa_run import evaluate_qa, score_answer
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.usage import ModelPrice, PriceTable
from memstrata.memory import Memory
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.synth.answer import is_abstention
from tests.support.fake_openai import FakeOpenAIServer, Reply, chat_body, tool_call

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def _memory(tmp_path: Path, embedder: Any, **settings: Any) -> Memory:
    s = Settings(data_dir=tmp_path / "memory", **settings)
    return Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
                  open_lexical_store(s), open_doc_store(s))


# -- offline -------------------------------------------------------------------------------------


def test_offline_baselines_answer_the_same_questions_from_their_own_context(tmp_path, embedder):
    data = load_dataset(FIXTURES / "locomo_mini.json", "locomo")
    memory = _memory(tmp_path, embedder)
    try:
        controller = Controller.for_memory(memory, ControllerSettings())
        system = evaluate_qa(data, memory, controller)
        runs = run_baselines(data, memory, [FULL_CONTEXT, RAG_L3],
                             lambda q, a: score_answer(q, a, None, prices=controller.prices),
                             chat=None, prices=controller.prices,
                             settings=BaselineSettings(rag_turns=2))
    finally:
        memory.close()
    qids = [r.qid for r in system.results]
    sessions = {}
    for s in data.parsed.sessions:
        sessions.setdefault(s.scope.user_id, set()).add(s.session_id)
    full, rag = runs[FULL_CONTEXT].results, runs[RAG_L3].results
    assert [r.qid for r in full] == qids and [r.qid for r in rag] == qids
    assert not any(r.error for r in full + rag)
    for r in full:  # the whole haystack, all of it read
        assert set(r.summary["drill_depths"]) == sessions[r.user]
        assert r.cost["haystack_read"] == pytest.approx(1.0)
        assert r.cost["offline_tokens"] == 0 and r.summary["llm_calls"] == 0
    for r in rag:  # two raw turns: at most two sessions, less read than the whole
        assert 1 <= len(r.summary["drill_depths"]) <= 2
        assert r.cost["haystack_read"] < 1.0
    by_q = {r.question: r for r in full}
    assert by_q["What did Ana name her kitten?"].prediction == "Pixel"
    assert by_q["Where did Ben run his first marathon?"].prediction == "Berlin"
    # The error split follows its definition on every baseline answer.
    for r in full + rag:
        kind = error_kind(r)
        if kind in ("retrieval", "generation"):
            assert (kind == "retrieval") == (not set(r.gold_sessions) <= read_sessions(r))
    assert all(error_kind(r) != "retrieval" for r in full)  # everything was read
    for run in (system, *runs.values()):
        extend_report(run.report, run.results)
    rows = side_by_side(system.report, {n: b.report for n, b in runs.items()})
    assert [r["system"] for r in rows] == ["system", FULL_CONTEXT, RAG_L3]
    assert all(r["questions"] == system.report["overall"]["n"] for r in rows)
    assert rows[1]["iterations_p50"] == 1.0
    assert rows[1]["read_tokens_per_question"] > rows[2]["read_tokens_per_question"]


# -- with an LLM (the test double) ------------------------------------------------------------------

#: What the double's generator needs to see in its context to answer each question.
NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "Which town is my hometown?": (("Galway",), "Galway"),
    "What oven temperature did you tell me to use for the crispy chickpeas?": (
        ("200 degrees",), "200 degrees Celsius"),
    "Can you suggest a board game for our next game night?": (
        ("arguments", "an hour"), "a cooperative game"),
    "How much have I spent on concert tickets in total?": (("$85", "$120"), "$205"),
    "How many days after getting the keys to my new flat did I buy the sofa?": (
        ("keys to our new flat", "bought a sofa"), "14 days"),
    "What is my job title now?": (("senior analyst",), "Senior analyst"),
}
TYPE_OF = {"Which town is my hometown?": "single-session-user",
           "What oven temperature did you tell me to use for the crispy chickpeas?":
               "single-session-assistant",
           "Can you suggest a board game for our next game night?":
               "single-session-preference",
           "How much have I spent on concert tickets in total?": "multi-session",
           "How many days after getting the keys to my new flat did I buy the sofa?":
               "temporal-reasoning",
           "What is my job title now?": "knowledge-update"}
NOT_FOUND = "It is not mentioned in the conversation."


def _reply(content: str | None, body: dict[str, Any], **kw: Any) -> Reply:
    prompt = sum(len(str(m.get("content") or "")) for m in body["messages"])
    return Reply(200, chat_body(content, prompt_tokens=prompt // 4 + 1,
                                completion_tokens=len(content or "") // 4 + 1, **kw))


def _field(text: str, label: str) -> str:
    return next(ln.split(": ", 1)[1] for ln in text.splitlines() if ln.startswith(label))


class CooperativeModel:
    """TEST DOUBLE behaviour: each role answers as a careful model would, from its input."""

    def __init__(self) -> None:
        self.judged: dict[str, list[str]] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        model, msgs = body["model"], body["messages"]
        last = str(msgs[-1].get("content") or "")
        if model == "ctl-m":
            if body.get("tool_choice") == "auto" and not any(m["role"] == "tool" for m in msgs):
                question = msgs[1]["content"].split(": ", 1)[1]
                return _reply(None, body, tool_calls=[
                    tool_call("search", {"queries": [question]}, "call_s")])
            if body.get("tool_choice") == "auto" and msgs[-1]["role"] == "tool" and \
                    "is_sufficient" not in last:
                return _reply(None, body, tool_calls=[tool_call("reflect", {}, "call_r")])
            if "new_queries" in last and "tools" not in body:
                return _reply(json.dumps({"is_sufficient": True, "items_found_so_far": [],
                                          "potential_gaps": "", "new_queries": []}), body)
            return _reply("draft", body)
        if model == "syn-m":  # notes: the evidence it was given, as it was given
            return _reply(last, body)
        if model == "judge-m":
            question = _field(last, "Question: ")
            self.judged.setdefault(question, []).append(
                next(t for t, rule in RULES.items() if last.startswith(rule)))
            gold = next(_field(last, lb) for lb in ("Correct answer: ", "Rubric: ",
                                                    "Explanation: ") if lb in last)
            response = _field(last, "Response: ")
            ok = not is_abstention(response) and set(normalize_answer(response).split()) <= \
                set(normalize_answer(gold).split())
            return _reply("yes" if ok else "no", body)
        assert model == "gen-m", model
        question = _field(last, "Question (asked on ").split("): ", 1)[-1]
        if ": " in question and question not in NEEDS:
            question = question.split(": ", 1)[1]
        context = last.split("Context:", 1)[1].split("\nRules:", 1)[0]
        needles, answer = NEEDS[question]
        found = all(n.lower() in context.lower() for n in needles)
        return _reply(json.dumps({"reasoning": "read the context",
                                  "answer": answer if found else NOT_FOUND}), body)


def test_llm_baselines_are_judged_by_type_and_cost_what_they_read(tmp_path, embedder):
    data = load_dataset(FIXTURES / "longmemeval_mini.json", "longmemeval")
    model = CooperativeModel()
    prices = PriceTable(models={"gen-m": ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)})
    with FakeOpenAIServer() as server:
        server.set_fallback(server.CHAT, model)
        memory = _memory(tmp_path, embedder, llm_backend="openai",
                         llm_base_url=server.base_url, llm_max_retries=0,
                         llm_model_controller="ctl-m", llm_model_synthesizer="syn-m",
                         llm_model_generator="gen-m", llm_model_builder="bld-m")
        try:
            from memstrata.llm.openai_compat import ChatClient

            chat = ChatClient(memory.settings, memory.meter, models={"judge": "judge-m"})
            controller = Controller(memory, ControllerSettings(), chat, prices)
            system = evaluate_qa(data, memory, controller, judge_client=chat)
            runs = run_baselines(data, memory, [FULL_CONTEXT, RAG_L3],
                                 lambda q, a: score_answer(q, a, chat, prices=prices),
                                 chat=chat, prices=prices,
                                 settings=BaselineSettings(rag_turns=1), budget_s=60.0)
            generator = [r.body for r in server.requests(server.CHAT)
                         if r.body["model"] == "gen-m"]
        finally:
            memory.close()
    full = {r.question: r for r in runs[FULL_CONTEXT].results}
    rag = {r.question: r for r in runs[RAG_L3].results}
    assert set(full) == set(rag) == set(NEEDS) == {r.question for r in system.results}
    # Every answer of every system was judged, each by the rule of its question type.
    assert all(r.judge is not None for r in [*system.results, *full.values(), *rag.values()])
    for question, kinds in model.judged.items():
        assert set(kinds) == {TYPE_OF[question]}, question
    assert len(model.judged) == 6 and sum(map(len, model.judged.values())) == 18
    # Full context holds every needle: the generator answers, the judge agrees.
    assert all(r.judge for r in full.values()), {q: r.prediction for q, r in full.items()}
    assert all(r.summary["llm_calls"] == 1 and r.cost["online_tokens"] > 0
               for r in full.values())
    # One raw turn cannot hold both tickets: a wrong answer, and a retrieval error.
    tickets = rag["How much have I spent on concert tickets in total?"]
    assert tickets.prediction == NOT_FOUND and tickets.judge is False
    assert error_kind(tickets) == "retrieval"
    assert error_kind(full["How much have I spent on concert tickets in total?"]) == "right"
    # The cost is the generator's tokens at its price; a smaller context costs less.
    for r in [*full.values(), *rag.values()]:
        t = r.summary["tokens"]["generator"]
        assert r.cost["online_usd"] == pytest.approx(
            (t["tokens_in"] * 1.0 + t["tokens_out"] * 2.0) / 1e6)
    for run in (system, *runs.values()):
        extend_report(run.report, run.results)
    rows = {r["system"]: r for r in side_by_side(system.report,
                                                 {n: b.report for n, b in runs.items()})}
    assert rows[FULL_CONTEXT]["judge_accuracy"] == 1.0
    assert rows[RAG_L3]["judge_accuracy"] < 1.0
    assert rows[FULL_CONTEXT]["llm_tokens_per_question"] > \
        rows[RAG_L3]["llm_tokens_per_question"]
    assert rows[FULL_CONTEXT]["usd_per_question"] > rows[RAG_L3]["usd_per_question"] > 0
    assert rows[RAG_L3]["retrieval_errors"] >= 1
    # The system went through its LLM controller and notes to the same generator.
    assert all(r.summary["tokens"].get("controller") for r in system.results)
    assert {b["messages"][0]["content"] for b in generator} == {
        generator[0]["messages"][0]["content"]}  # one answer prompt for all three


# -- the quick-start install ----------------------------------------------------------------------


def test_eval_qa_runs_without_matplotlib_and_says_how_to_get_plots(tmp_path: Path):
    blocker = tmp_path / "no-matplotlib" / "matplotlib"
    blocker.mkdir(parents=True)
    # As on an install without the eval extra: importing matplotlib fails.
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n")
    out = tmp_path / "qa.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(blocker.parent), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "memstrata", "eval", "qa", "--dataset",
                        str(FIXTURES / "locomo_mini.json"), "--format", "locomo", "--output",
                        str(out), "--baselines", "full-context,rag-l3"],
                       capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert [row["system"] for row in doc["comparison"]] == ["system", FULL_CONTEXT, RAG_L3]
    assert doc["report"]["overall"]["bleu1"] is not None
    assert doc["report"]["iterations"]["p99"] >= doc["report"]["iterations"]["p50"]
    assert set(doc["baselines"]) == {FULL_CONTEXT, RAG_L3}
    assert "BLEU-1" in r.stdout and "system vs baselines" in r.stdout
    assert "pip install 'memstrata[eval]'" in r.stderr
    assert not out.with_suffix(".depth.png").exists()


def test_a_baseline_whose_llm_fails_answers_offline_and_says_so(tmp_path, embedder):
    data = load_dataset(FIXTURES / "locomo_mini.json", "locomo")
    data.questions = data.questions[:3]
    with FakeOpenAIServer() as server:
        server.set_fallback(server.CHAT, Reply(500, {"error": {"message": "down"}}))
        memory = _memory(tmp_path, embedder, llm_backend="openai",
                         llm_base_url=server.base_url, llm_max_retries=0)
        try:
            from memstrata.llm.openai_compat import ChatClient

            chat = ChatClient(memory.settings, memory.meter)
            prices = PriceTable()
            runs = run_baselines(data, memory, [FULL_CONTEXT],
                                 lambda q, a: score_answer(q, a, None, prices=prices),
                                 chat=chat, prices=prices)
        finally:
            memory.close()
    results = runs[FULL_CONTEXT].results
    assert all(r.error is None and r.fallback and r.fallback.startswith("generator:")
               for r in results), [r.fallback for r in results]
    assert results[0].prediction == "Pixel"  # the extractive answer over the same context
    report = extend_report(runs[FULL_CONTEXT].report, results)
    assert report["fallbacks"] == 3
