"""LLM calls that book their tokens and time on the question's trace.

``ChatClient.chat`` returns the usage of each call, so every LLM step of the
controller, the notes, the answer and the judge goes through here and the
trace can say what each role cost for this one question, even when many
questions share a client and its meter.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memstrata.evidence.trace import Trace

if TYPE_CHECKING:  # the openai package is only needed when an LLM is configured
    from memstrata.llm.openai_compat import ChatClient, ChatReply
    from memstrata.llm.usage import Role


def chat(client: "ChatClient", trace: Trace, step: int, role: "Role",
         messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]] | None = None,
         tool_choice: str | Mapping[str, Any] | None = None,
         note: str | None = None) -> "ChatReply":
    t0 = time.perf_counter()
    reply = client.chat(role, messages, tools=tools, tool_choice=tool_choice)
    ms = (time.perf_counter() - t0) * 1000
    trace.llm(step, role, reply.model, reply.prompt_tokens, reply.completion_tokens, ms, note)
    return reply


def chat_json(client: "ChatClient", trace: Trace, step: int, role: "Role",
              messages: Sequence[Mapping[str, Any]], *, note: str | None = None,
              retries: int = 1) -> dict[str, Any] | None:
    """One JSON object from the model, asked again ``retries`` times; None if it never parses."""
    from memstrata.llm.openai_compat import extract_json_object

    for attempt in range(1 + retries):
        reply = chat(client, trace, step, role, messages,
                     note=note if attempt == 0 else f"{note or role}: retry (reply was not JSON)")
        found = extract_json_object(reply.message.content or "")
        if found is not None:
            return found
        if reply.finish_reason == "length":
            break  # cut off at max_tokens: asking again would be cut off again
    return None
