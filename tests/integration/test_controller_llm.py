"""The LLM-driven controller (Algorithm 1) driven through every path by a scripted model.

``ScriptedChatClient`` below is a TEST DOUBLE of
:class:`memstrata.llm.openai_compat.ChatClient`: it returns scripted replies
per role (tool calls or text, as real ``ChatCompletionMessage`` objects) and
records every request. The memory behind the tools is real (the embedded
stack with a hand-written history), so tool results are the real thing.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage
from openai.types.chat.chat_completion_message_tool_call import (
    ChatCompletionMessageToolCall,
    Function,
)

from memstrata.controller import prompts
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.llm.openai_compat import ChatReply
from memstrata.llm.usage import ModelPrice, PriceTable
from memstrata.memory import Memory
from memstrata.model import Layer
from tests.support.conversation import ASKED_ON, MAYA, open_memory

Call = tuple[str, Any]  # (tool name, arguments as a dict or a raw string)


@dataclass
class Scripted:
    content: str | None = None
    calls: list[Call] = field(default_factory=list)
    prompt_tokens: int = 100
    completion_tokens: int = 10


def say(text: str, **kw: int) -> Scripted:
    return Scripted(content=text, **kw)


def use(*calls: Call) -> Scripted:
    return Scripted(calls=list(calls))


@dataclass
class Request:
    role: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tool_choice: Any


class ScriptedChatClient:
    """TEST DOUBLE of ChatClient: scripted replies per role, every request recorded."""

    def __init__(self, **script: list[Scripted | Callable[[list[dict[str, Any]]], Scripted]]):
        self.queues = {role: deque(items) for role, items in script.items()}
        self.requests: list[Request] = []
        self._ids = 0

    def model_for(self, role: str) -> str:
        return f"{role}-model"

    def chat(self, role: str, messages: Any, tools: Any = None, tool_choice: Any = None,
             ) -> ChatReply:
        msgs = json.loads(json.dumps(list(messages)))  # a snapshot, as sent
        self.requests.append(Request(role, msgs, list(tools) if tools else None, tool_choice))
        queue = self.queues.get(role)
        assert queue, f"no scripted reply left for role {role!r}"
        item = queue.popleft()
        reply = item(msgs) if callable(item) else item
        tool_calls = []
        for name, args in reply.calls:
            self._ids += 1
            raw = args if isinstance(args, str) else json.dumps(args)
            tool_calls.append(ChatCompletionMessageToolCall(
                id=f"call_{self._ids}", type="function",
                function=Function(name=name, arguments=raw)))
        message = ChatCompletionMessage(role="assistant", content=reply.content,
                                        tool_calls=tool_calls or None)
        return ChatReply(message=message, model=self.model_for(role),
                         prompt_tokens=reply.prompt_tokens,
                         completion_tokens=reply.completion_tokens,
                         finish_reason="tool_calls" if tool_calls else "stop")

    def of(self, role: str) -> list[Request]:
        return [r for r in self.requests if r.role == role]

    def exhausted(self) -> bool:
        return all(not q for q in self.queues.values())


def answer_json(answer: str) -> Scripted:
    return say(json.dumps({"reasoning": "from the notes", "answer": answer}))


def reflection(sufficient: bool, queries: list[str] | None = None) -> Scripted:
    return say(json.dumps({"is_sufficient": sufficient, "items_found_so_far": ["Pixel"],
                           "potential_gaps": "" if sufficient else "need more",
                           "new_queries": queries or []}))


PRICES = PriceTable(models={
    "controller-model": ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0),
    "synthesizer-model": ModelPrice(input_per_mtok=0.4, output_per_mtok=1.6),
    "generator-model": ModelPrice(input_per_mtok=0.4, output_per_mtok=1.6),
})


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder):
    m = open_memory(tmp_path_factory.mktemp("llm"), embedder)
    yield m
    m.close()


def run(memory: Memory, chat: ScriptedChatClient, question: str = "What is my kitten called?",
        **settings: Any):
    ctl = Controller(memory, ControllerSettings(policy="llm", **settings), chat,  # type: ignore[arg-type]
                     prices=PRICES)
    answer = ctl.answer(MAYA, question, ASKED_ON)
    assert chat.exhausted(), {r: list(q) for r, q in chat.queues.items() if q}
    return answer


def tool_messages(req: Request) -> list[dict[str, Any]]:
    return [m for m in req.messages if m["role"] == "tool"]


def test_early_stop_answers_without_tools(memory: Memory):
    chat = ScriptedChatClient(controller=[say("No idea yet, probably Pixel")],
                              synthesizer=[say("RELEVANT FACTS: none\nANSWER HINT: Pixel")],
                              generator=[answer_json("Pixel")])
    a = run(memory, chat)
    assert a.mode == "llm" and a.answer == "Pixel" and a.reasoning == "from the notes"
    assert a.draft == "No idea yet, probably Pixel"
    s = a.summary
    assert s.steps == 1 and s.tool_calls == 0 and s.llm_calls == 3 and s.nudges == 0
    assert s.stop_reason == "answered" and s.deepest_layer is None and s.sessions_drilled == 0
    assert s.tokens["controller"].tokens_in == 100 and s.tokens["generator"].tokens_out == 10
    assert s.cost_usd == pytest.approx((100 * 2 + 10 * 8 + 2 * (100 * 0.4 + 10 * 1.6)) / 1e6)
    first = chat.of("controller")[0]
    assert first.tool_choice == "auto"
    assert {t["function"]["name"] for t in first.tools or []} == {
        "read_profile", "search", "read_facts", "read_turns", "read_raw", "interpret_dates",
        "decompose", "reflect"}
    gen = chat.of("generator")[0].messages[-1]["content"]
    assert "ANSWER HINT: Pixel" in gen and "No idea yet, probably Pixel" in gen


def test_the_llm_reads_a_profile_and_its_bullets_reach_the_answer_step(memory: Memory):
    chat = ScriptedChatClient(
        controller=[use(("read_profile", {"question": "What is the name of my kitten?"})),
                    say("Pixel")],
        synthesizer=[say("RELEVANT FACTS: the kitten")], generator=[answer_json("Pixel")])
    a = run(memory, chat)
    step = next(s for s in a.steps if s.tool == "read_profile")
    assert step.tokens_out > 0 and a.summary.profiles_read == 1
    result = tool_messages(chat.of("controller")[1])[-1]["content"]
    assert result.startswith("Profile read: target=")
    # Offline-only rules do not override an LLM answer; the bullets go to the notes.
    assert a.answer == "Pixel" and a.mode == "llm"


def test_the_profile_tool_is_not_offered_without_profiles(memory: Memory):
    chat = ScriptedChatClient(controller=[say("Pixel")], synthesizer=[say("notes")],
                              generator=[answer_json("Pixel")])
    run(memory, chat, use_profiles=False)
    assert "read_profile" not in {t["function"]["name"]
                                  for t in chat.of("controller")[0].tools or []}


def test_descends_l1_l2_l3_then_reflection_ends_the_search(memory: Memory):
    sid = "s3-back-home"
    chat = ScriptedChatClient(
        controller=[
            use(("search", {"queries": ["kitten name", "adopted a kitten"]})),
            use(("read_facts", {"session_ids": [sid]})),
            use(("read_turns", {"session_id": sid})),
            use(("read_raw", {"session_id": sid, "query": "kitten named", "limit": 1})),
            use(("reflect", {})),
            reflection(True),                      # the reflect tool's own LLM call
            say("Pixel"),                          # draft, asked for with tools off
        ],
        synthesizer=[say("notes")], generator=[answer_json("Pixel")])
    a = run(memory, chat)
    assert a.answer == "Pixel" and a.draft == "Pixel"
    reads = [(s.tool, s.layer) for s in a.steps
             if s.tool.startswith("read_") and sid in s.sessions and s.note != "auto-drill"]
    assert reads == [("read_facts", Layer.L1), ("read_turns", Layer.L2), ("read_raw", Layer.L3)]
    assert a.summary.drill_depths[sid] == Layer.L3 and a.summary.deepest_layer == Layer.L3
    assert a.summary.stop_reason == "sufficient" and a.summary.reflections == 1
    raw_step = next(s for s in a.steps if s.tool == "read_raw")
    assert raw_step.arguments == {"session_id": sid, "query": "kitten named", "limit": 1}
    last = chat.of("controller")[-1]
    assert last.tool_choice == "none" and last.messages[-1]["content"] == prompts.FINAL[
        "sufficient"]
    # Each tool result went back with the id of the call it answers.
    req = chat.of("controller")[4]
    assistant = [m for m in req.messages if m["role"] == "assistant"]
    ids = [c["id"] for m in assistant for c in m["tool_calls"]]
    assert [m["tool_call_id"] for m in tool_messages(req)] == ids
    raw_result = tool_messages(chat.of("controller")[4])[-1]["content"]
    assert "L3 raw turns" in raw_result and "Pixel" in raw_result


def test_reflection_follow_up_queries_and_convergence(memory: Memory,
                                                     monkeypatch: pytest.MonkeyPatch):
    # The script's "nothing new this time" holds when every query also searches by
    # vector: "kitten" alone is fully covered by BM25 and would skip the dense side.
    monkeypatch.setattr(memory.retriever, "params",
                        replace(memory.retriever.params, dense_skip_coverage=None))
    chat = ScriptedChatClient(
        controller=[
            use(("search", {"queries": ["kitten"]})),
            use(("reflect", {})),
            reflection(False, ["name of the grey kitten", "kitten"]),
            lambda msgs: use(("search", {"queries": json.loads(msgs[-1]["content"])[
                "new_queries"]})),
            use(("search", {"queries": ["name of the grey kitten"]})),  # nothing new this time
            use(("reflect", {})),
            reflection(False, ["pet"]),
            say("Pixel"),
        ],
        synthesizer=[say("notes")], generator=[answer_json("Pixel")])
    a = run(memory, chat, auto_drill=0)
    searches = [s.arguments["queries"] for s in a.steps if s.tool == "search"]
    # Already-tried queries are filtered out of the reflection's suggestions.
    assert searches == [["kitten"], ["name of the grey kitten"], ["name of the grey kitten"]]
    assert a.summary.reflections == 2 and a.summary.stop_reason == "converged"
    second = json.loads(tool_messages(chat.of("controller")[-1])[-1]["content"])
    assert second["converged"] is True and second["next"].startswith("answer now")
    reflect_prompt = chat.of("controller")[-2].messages[-1]["content"]
    assert '"name of the grey kitten"' in reflect_prompt  # previous queries are shown
    assert chat.of("controller")[-1].tool_choice == "none"


def test_nudges_to_reflect_at_most_twice(memory: Memory):
    chat = ScriptedChatClient(
        controller=[use(("search", {"queries": ["kitten"]})),
                    say("Pixel?"), say("Pixel!"), say("Pixel.")],
        synthesizer=[say("notes")], generator=[answer_json("Pixel")])
    a = run(memory, chat)
    assert a.summary.nudges == 2 and a.draft == "Pixel."
    assert [s.tool for s in a.steps].count("nudge") == 2
    last = chat.of("controller")[-1].messages
    assert [m["content"] for m in last if m["role"] == "user"][-2:] == [prompts.NUDGE] * 2


def test_nudge_then_reflect_then_answer(memory: Memory):
    chat = ScriptedChatClient(
        controller=[use(("search", {"queries": ["kitten"]})), say("Pixel?"),
                    use(("reflect", {})), reflection(True), say("Pixel")],
        synthesizer=[say("notes")], generator=[answer_json("Pixel")])
    a = run(memory, chat)
    assert a.summary.nudges == 1 and a.summary.reflections == 1 and a.draft == "Pixel"


def test_step_budget_forces_a_draft(memory: Memory):
    chat = ScriptedChatClient(
        controller=[use(("search", {"queries": [f"kitten {i}"]})) for i in range(3)]
        + [say("best guess: Pixel")],
        synthesizer=[say("notes")], generator=[answer_json("Pixel")])
    a = run(memory, chat, max_steps=3)
    assert a.summary.steps == 3 and a.summary.stop_reason == "budget"
    final = chat.of("controller")[-1]
    assert final.tool_choice == "none" and final.messages[-1]["content"] == prompts.FINAL[
        "budget"]
    assert len(chat.of("controller")) == 4 and a.draft == "best guess: Pixel"


def test_malformed_tool_calls_are_reported_and_recovered_from(memory: Memory):
    chat = ScriptedChatClient(
        controller=[
            use(("read_facts", '{"session_ids": ["s3-back-home"'),   # broken JSON
                ("delete_memory", {"all": True}),                      # no such tool
                ("read_turns", {"session_id": "s99"}),                 # no such session
                ("read_raw", {"session_id": "s3-back-home", "turns": "two"})),  # bad type
            use(("read_facts", {"session_ids": ["s3-back-home"]})),   # recovers
            use(("reflect", {})), reflection(True), say("Pixel"),
        ],
        synthesizer=[say("notes")], generator=[answer_json("Pixel")])
    a = run(memory, chat)
    errors = tool_messages(chat.of("controller")[1])
    assert len(errors) == 4 and all(m["content"].startswith("ERROR: ") for m in errors)
    assert "not valid JSON" in errors[0]["content"]
    assert "unknown tool 'delete_memory'" in errors[1]["content"]
    assert "no session 's99'" in errors[2]["content"]
    assert "turns: expected a list of turn numbers" in errors[3]["content"]
    assert a.summary.tool_errors == 4
    noted = [s for s in a.steps if (s.note or "").startswith("error:")]
    assert [s.tool for s in noted] == ["read_facts", "delete_memory", "read_turns", "read_raw"]
    assert noted[0].arguments == {"raw": '{"session_ids": ["s3-back-home"'}
    assert a.summary.drill_depths == {"s3-back-home": Layer.L1} and a.answer == "Pixel"


def test_ablations_shape_the_tools_and_the_prompts(memory: Memory):
    chat = ScriptedChatClient(
        controller=[use(("read_raw", {"session_id": "s3-back-home"})), say("Pixel")],
        generator=[answer_json("Pixel")])
    a = run(memory, chat, use_l3=False, use_reflect=False, use_notes=False, use_draft=False)
    offered = {t["function"]["name"] for t in chat.of("controller")[0].tools or []}
    assert "read_raw" not in offered and "reflect" not in offered
    assert "switched off" in tool_messages(chat.of("controller")[1])[0]["content"]
    assert a.summary.nudges == 0  # nothing to nudge towards without reflect
    assert chat.of("synthesizer") == [] and a.notes is None
    gen = chat.of("generator")[0].messages[-1]["content"]
    assert "Preliminary answer" not in gen and "Pixel" not in gen.split("Context:")[0]
    assert sorted(a.summary.ablations) == ["draft", "l3", "notes", "reflect"]


def test_unreadable_reflection_and_answer_fall_back(memory: Memory):
    chat = ScriptedChatClient(
        controller=[use(("search", {"queries": ["kitten"]})), use(("reflect", {})),
                    say("not json"), say("still not json"), say("Pixel")],
        synthesizer=[say("notes")],
        generator=[say("no json here"), say("nor here")])
    a = run(memory, chat)
    assert a.answer == "Pixel"  # the draft stands in for an unparseable answer
    assert a.summary.reflections == 1
