"""Request shapes of the LLM controller, notes, answer and judge, over real HTTP.

The real :class:`ChatClient` (the ``openai`` SDK) talks to ``FakeOpenAIServer``,
a TEST DOUBLE of an OpenAI-compatible endpoint on 127.0.0.1, and the test
reads back what was sent: the model of each role, the tool schemas, the
assistant tool-call turns and the ``tool`` results with their
``tool_call_id``, ``tool_choice``, and the JSON answer and yes/no judge calls.
"""

from __future__ import annotations

import json

from memstrata.controller import prompts
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.eval.judge import judge
from memstrata.model import Layer
from tests.support.conversation import ASKED_ON, MAYA, open_memory
from tests.support.fake_openai import FakeOpenAIServer, tool_call

MODELS = {"llm_model_controller": "ctl-m", "llm_model_synthesizer": "syn-m",
          "llm_model_generator": "gen-m", "llm_model_builder": "bld-m"}


def test_controller_notes_answer_and_judge_request_shapes(tmp_path, embedder):
    with FakeOpenAIServer() as server:
        memory = open_memory(tmp_path, embedder, llm_backend="openai",
                             llm_base_url=server.base_url, llm_max_retries=0, **MODELS)
        try:
            server.queue_chat(None, tool_calls=[
                tool_call("search", {"queries": ["kitten name"]}, "call_a"),
                tool_call("read_facts", {"session_ids": ["s3-back-home"]}, "call_b")],
                prompt_tokens=500, completion_tokens=20)
            server.queue_chat("Pixel?", prompt_tokens=800, completion_tokens=3)     # -> nudge
            server.queue_tool_call("reflect", {}, prompt_tokens=900, completion_tokens=5)
            server.queue_json({"is_sufficient": True, "items_found_so_far": ["Pixel"],
                               "potential_gaps": "", "new_queries": []})
            server.queue_chat("Pixel", prompt_tokens=950, completion_tokens=2)      # draft
            server.queue_chat("1. RELEVANT FACTS: the kitten is named Pixel (s3-back-home)")
            server.queue_json({"reasoning": "notes say so", "answer": "Pixel"})
            controller = Controller.for_memory(memory, ControllerSettings())
            assert controller.mode == "llm"
            answer = controller.answer(MAYA, "What is the name of my kitten?", ASKED_ON)

            server.queue_chat("Yes.")
            verdict = judge(controller.chat, "What is the name of my kitten?",  # type: ignore[arg-type]
                            "Pixel", answer.answer, "single-hop")
            reqs = [r.body for r in server.requests(server.CHAT)]
        finally:
            memory.close()

    assert answer.answer == "Pixel" and answer.draft == "Pixel" and verdict.correct
    assert [r["model"] for r in reqs] == ["ctl-m"] * 5 + ["syn-m", "gen-m", "gen-m"]
    assert all(r["temperature"] == 0.0 for r in reqs)

    first = reqs[0]
    assert first["tool_choice"] == "auto"
    names = [t["function"]["name"] for t in first["tools"]]
    assert names == ["read_profile", "search", "read_facts", "read_turns", "read_raw",
                     "interpret_dates", "decompose", "reflect"]
    search = first["tools"][1]
    assert search["type"] == "function"
    assert search["function"]["parameters"]["required"] == ["queries"]
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][1] == {"role": "user", "content": prompts.controller_user(
        "What is the name of my kitten?", ASKED_ON)}

    # The assistant's tool calls are sent back, each followed by its result.
    second = reqs[1]["messages"]
    assistant = second[2]
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "queries": ["kitten name"]}
    results = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["call_a", "call_b"]
    assert "s3-back-home" in results[0]["content"]
    assert "L1 key facts" in results[1]["content"]

    # No reflection yet and the evidence grew: the model is nudged.
    assert reqs[2]["messages"][-1] == {"role": "user", "content": prompts.NUDGE}
    # The reflect tool asks the controller model for JSON, without tools.
    assert "tools" not in reqs[3] and "new_queries" in reqs[3]["messages"][-1]["content"]
    # Reflection said enough: one last call with tools switched off for the draft.
    assert reqs[4]["tool_choice"] == "none" and reqs[4]["tools"]
    assert reqs[4]["messages"][-1]["content"] == prompts.FINAL["sufficient"]
    assert reqs[4]["messages"][-2]["role"] == "tool"  # the reflect result

    notes_user = reqs[5]["messages"][-1]["content"]
    assert "What is the name of my kitten?" in notes_user and "Pixel" in notes_user
    assert "L1 key facts" in notes_user  # the evidence set, rendered
    gen_user = reqs[6]["messages"][-1]["content"]
    assert "RELEVANT FACTS: the kitten is named Pixel" in gen_user
    assert '"answer"' in gen_user and "Pixel" in gen_user.split("Preliminary answer")[1]
    assert "yes or no" in reqs[7]["messages"][-1]["content"]

    s = answer.summary
    assert s.llm_calls == 7 and s.nudges == 1 and s.reflections == 1
    assert s.tokens["controller"].tokens_in == 500 + 800 + 900 + 10 + 950
    assert s.tokens["controller"].calls == 5 and not s.tokens["controller"].estimated
    assert s.drill_depths["s3-back-home"] == Layer.L1
    assert s.unpriced_models == ["ctl-m", "syn-m", "gen-m"]  # not in the example table


def test_judge_model_can_differ_and_verdicts_parse(tmp_path, embedder):
    from memstrata.config import Settings
    from memstrata.eval.judge import judge_type, parse_verdict
    from memstrata.llm.openai_compat import ChatClient

    with FakeOpenAIServer() as server:
        client = ChatClient(Settings(data_dir=tmp_path, llm_backend="openai",
                                     llm_base_url=server.base_url, llm_max_retries=0),
                            models={"judge": "judge-m"})
        server.queue_chat("no, it names a different cat")
        v = judge(client, "Q?", "Pixel", "Mochi", "adversarial", adversarial=True)
        body = server.requests(server.CHAT)[-1].body
    assert not v.correct and body["model"] == "judge-m"
    assert "cannot be answered" in body["messages"][-1]["content"]
    assert judge_type("temporal") == "temporal-reasoning"
    assert judge_type("knowledge-update") == "knowledge-update"
    assert judge_type("single-hop") == "default"
    assert parse_verdict("Yes") and not parse_verdict("No.") and not parse_verdict("maybe")
