"""TEST DOUBLES for benchmarks: an LLM chat client and a layer builder that each take a
fixed time per call, so throughput is measured for waiting on a model, not for CPU.

Nothing here is shipped behaviour: the answers are canned. They stand in for a
remote model (300 ms a call by default) when measuring how rollouts and builds
scale over Ray actors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.usage import UsageMeter
from memstrata.model import KeyFact, SessionMeta, Turn, TurnNote

LATENCY_S = 0.3


class FixedLatencyChat:
    """TEST DOUBLE of :class:`~memstrata.llm.openai_compat.ChatClient`: ``latency_s`` a call.

    The controller's first step searches for the question; its next step returns a
    draft; JSON calls (notes, answer) get a small fixed object.
    """

    def __init__(self, latency_s: float = LATENCY_S) -> None:
        self.latency_s = latency_s
        self.meter = UsageMeter()
        self.calls = 0

    def model_for(self, role: str) -> str:
        return "fixed-latency-double"

    def chat(self, role: str, messages: Sequence[Mapping[str, Any]],
             tools: Sequence[Mapping[str, Any]] | None = None,
             tool_choice: str | Mapping[str, Any] | None = None) -> Any:
        from openai.types.chat import ChatCompletionMessage
        from openai.types.chat.chat_completion_message_tool_call import (
            ChatCompletionMessageToolCall,
            Function,
        )

        from memstrata.llm.openai_compat import ChatReply

        time.sleep(self.latency_s)
        self.calls += 1
        searched = any(m.get("role") == "tool" for m in messages)
        if tools and tool_choice == "auto" and not searched:
            question = str(messages[-1].get("content", ""))[-200:]
            call = ChatCompletionMessageToolCall(
                id=f"call_{self.calls}", type="function",
                function=Function(name="search", arguments=json.dumps({"query": question})))
            msg = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call])
        elif tools:
            msg = ChatCompletionMessage(role="assistant", content="A draft from the double.")
        else:
            msg = ChatCompletionMessage(role="assistant", content=json.dumps(
                {"answer": "unknown", "reasoning": "double", "items": [], "relevant": []}))
        return ChatReply(message=msg, model=self.model_for(role), prompt_tokens=100,
                         completion_tokens=10, finish_reason="stop")


class FixedLatencyBuilder(ExtractiveBuilder):
    """TEST DOUBLE: the extractive builder plus ``latency_s`` per L1/L2 build (one LLM call)."""

    def __init__(self, latency_s: float = LATENCY_S) -> None:
        super().__init__()
        self.latency_s = latency_s

    def key_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[KeyFact]:
        time.sleep(self.latency_s)
        return super().key_facts(meta, turns)

    def turn_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[TurnNote]:
        time.sleep(self.latency_s)
        return super().turn_notes(meta, turns)
