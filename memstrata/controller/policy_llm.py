"""The LLM-driven controller: Algorithm 1 over OpenAI-style tool calling.

Each step asks the controller model for its next move with the enabled
tools attached. Tool calls are executed and their results returned as
``tool`` messages (errors included, so the model can correct itself). A
reply without tool calls is the draft answer, unless the evidence grew since
the last reflection: then the model is nudged to reflect first, at most
``max_nudges`` times. When a reflection finds nothing new, or the step
budget runs out, the model is asked once more, with tools switched off, for
its draft.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstrata.controller import prompts
from memstrata.evidence import llm_calls
from memstrata.controller.config import ControllerSettings
from memstrata.controller.state import ControllerState, render_evidence
from memstrata.controller.tools import MemoryTools, Reflection
from memstrata.evidence.trace import Trace
from memstrata.synth.answer import Draft

if TYPE_CHECKING:
    from memstrata.llm.openai_compat import ChatClient


def _assistant_message(message: Any) -> dict[str, Any]:
    """The model's turn as it must be sent back: content plus the tool calls it made."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    calls = []
    for c in message.tool_calls or []:
        fn = getattr(c, "function", None)
        calls.append({"id": c.id, "type": "function",
                      "function": {"name": getattr(fn, "name", "") or "",
                                   "arguments": getattr(fn, "arguments", "") or ""}})
    if calls:
        out["tool_calls"] = calls
    return out


class LLMReflector:
    """Reflection by the controller model (APDMem's reflect prompt, in our words)."""

    def __init__(self, client: "ChatClient", settings: ControllerSettings) -> None:
        self.client = client
        self.settings = settings

    def reflect(self, state: ControllerState, trace: Trace) -> Reflection:
        messages = prompts.reflect_messages(
            state.question, state.asked_on,
            [h.session_id for h in state.ranked_candidates()], list(state.drilled),
            state.queries, render_evidence(state, self.settings.max_evidence_chars))
        data = llm_calls.chat_json(self.client, trace, state.steps, "controller", messages,
                                   note="reflect")
        if data is None:
            return Reflection(False, gaps="the reflection reply was not valid JSON")
        queries = data.get("new_queries")
        items = data.get("items_found_so_far")
        return Reflection(
            sufficient=data.get("is_sufficient") is True,
            items=[str(i) for i in items] if isinstance(items, list) else [],
            gaps=str(data.get("potential_gaps") or ""),
            new_queries=[str(q).strip() for q in queries if str(q).strip()][:5]
            if isinstance(queries, list) else [],
        )


class LLMPolicy:
    """Algorithm 1: the controller model picks tools until it answers, converges or runs out."""

    name = "llm"

    def __init__(self, client: "ChatClient", settings: ControllerSettings) -> None:
        self.client = client
        self.settings = settings

    def run(self, state: ControllerState, tools: MemoryTools, trace: Trace) -> Draft | None:
        s = self.settings
        schemas = tools.schemas()
        enabled = tools.enabled()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.controller_system(s, enabled)},
            {"role": "user", "content": prompts.controller_user(state.question, state.asked_on)},
        ]
        draft: str | None = None
        while True:
            if state.steps >= s.max_steps:
                state.stop_reason = "budget"
                break
            state.steps += 1
            reply = llm_calls.chat(self.client, trace, state.steps, "controller", messages,
                                   tools=schemas, tool_choice="auto", note="controller step")
            msg = reply.message
            if msg.tool_calls:
                messages.append(_assistant_message(msg))
                for call in msg.tool_calls:
                    fn = getattr(call, "function", None)
                    name = getattr(fn, "name", None) or "(missing name)"
                    result = tools.call(name, getattr(fn, "arguments", None))
                    messages.append({"role": "tool", "tool_call_id": call.id,
                                     "content": result.content})
                if state.converged:
                    break
                continue
            if ("reflect" in enabled and state.grew_since_reflection()
                    and state.nudges < s.max_nudges):
                state.nudges += 1
                messages.append({"role": "assistant", "content": msg.content or ""})
                messages.append({"role": "user", "content": prompts.NUDGE})
                trace.add(state.steps, "nudge", note=f"nudge {state.nudges} of {s.max_nudges}")
                continue
            draft = (msg.content or "").strip()
            state.stop_reason = "answered"
            break
        if draft is None:
            reason = state.stop_reason if state.stop_reason in prompts.FINAL else "budget"
            messages.append({"role": "user", "content": prompts.FINAL[reason]})
            reply = llm_calls.chat(self.client, trace, state.steps, "controller", messages,
                                   tools=schemas, tool_choice="none", note=f"draft ({reason})")
            draft = (reply.message.content or "").strip()
        return Draft(draft) if draft else None
