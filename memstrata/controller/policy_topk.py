"""The "without controller" ablation: plain top-K retrieval over the hierarchy.

One search with the question; the best ``rag_sessions`` sessions are read at
every enabled layer (L1, L2, and the raw turns that best match the question),
with no decisions, no reflection and no draft. This is APDMem's "w/o
Controller" row: the hierarchy without the agent.
"""

from __future__ import annotations

from memstrata.controller.config import ControllerSettings
from memstrata.controller.state import ControllerState
from memstrata.controller.tools import MemoryTools
from memstrata.evidence.trace import Trace
from memstrata.synth.answer import Draft


class TopKPolicy:
    name = "top-k"

    def __init__(self, settings: ControllerSettings) -> None:
        self.settings = settings

    def run(self, state: ControllerState, tools: MemoryTools, trace: Trace) -> Draft | None:
        state.steps += 1
        result = tools.call("search", {"queries": [state.question]})
        enabled = set(tools.enabled())
        for sid in result.sessions[: self.settings.rag_sessions]:
            state.steps += 1
            if "read_facts" in enabled:
                tools.call("read_facts", {"session_ids": [sid]})
            if "read_turns" in enabled:
                tools.call("read_turns", {"session_id": sid})
            if "read_raw" in enabled:
                tools.call("read_raw", {"session_id": sid, "query": state.question})
        state.stop_reason = "top-k"
        return None
