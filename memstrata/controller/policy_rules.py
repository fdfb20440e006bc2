"""The offline policy: the controller's decisions made by rules instead of an LLM.

It walks the same tools in the order the paper's trajectories do:
interpret relative dates, split compound questions, search with a few
query variants (which auto-drills L1 of the best sessions), descend to L2 and
L3 in the best sessions only when the facts do not cover the question (or the
question wants exact detail), then reflect: new queries from the question
words still missing and from names found in the evidence, until a
reflection adds nothing or its rounds are used.
"""

from __future__ import annotations

from collections.abc import Callable

from memstrata.evidence import lexical, relevance
from memstrata.controller.config import ControllerSettings
from memstrata.evidence.cues import keyword_query
from memstrata.controller.state import ControllerState
from memstrata.controller.tools import MemoryTools, Reflection, ToolResult
from memstrata.evidence.trace import Trace
from memstrata.synth.answer import Draft, draft_from
from memstrata.evidence.extract import span_for
from memstrata.profiles.query import wants_profile

_MAX_FIRST_QUERIES = 4
_FOCUS_SESSIONS = 2


#: Runs one tool as one controller step (raises ``_Budget`` when T_max is reached).
Step = Callable[[str, "dict[str, object] | None"], ToolResult]


class _Budget(Exception):
    """The step budget T_max is used up."""


class RuleReflector:
    """Reflection by coverage: is the question covered, what is missing, what to search next."""

    def reflect(self, state: ControllerState, trace: Trace) -> Reflection:
        cues = state.cues
        verdict = relevance.judge(cues, state.lines)
        ranked = relevance.rank(cues, state.lines, limit=3)
        items = [span_for(cues, s.line)[0] for s in ranked if s.coverage > 0]
        if verdict.enough:
            return Reflection(True, items, "")
        originals = {lexical.stem(w): w for w in lexical.words(cues.question)}
        missing = [originals.get(t, t) for t in verdict.missing]
        queries: list[str] = []
        if missing:
            queries.append(" ".join([*cues.names, *missing]))
        asked = {n.lower() for n in cues.names}
        speakers = {(ln.speaker or "").lower() for ln in state.lines}
        topic = " ".join(w for w in lexical.words(cues.question)
                         if not lexical.is_stop(w) and w.lower() not in asked)
        for s in ranked:
            for name in lexical.names(s.line.text):
                low = name.lower()
                if low not in asked and low not in speakers and topic:
                    queries.append(f"{name} {topic}")
                    asked.add(low)
        gaps = ("question words not found: " + ", ".join(missing)) if missing else \
            "no line covers the question well enough"
        return Reflection(False, items, gaps, list(dict.fromkeys(queries))[:3])


class RulePolicy:
    """Algorithm 1 with rules in the LLM's place (the offline mode)."""

    name = "rules"

    def __init__(self, settings: ControllerSettings) -> None:
        self.settings = settings

    def run(self, state: ControllerState, tools: MemoryTools, trace: Trace) -> Draft | None:
        s = self.settings
        cues = state.cues

        def step(name: str, args: dict[str, object] | None = None) -> ToolResult:
            if state.steps >= s.max_steps:
                raise _Budget
            state.steps += 1
            return tools.call(name, args)

        enabled = set(tools.enabled())
        try:
            # The profiles first (a cross-session layer) when the question asks something of
            # someone; a decisive answer there needs one search for context, no drilling.
            if "read_profile" in enabled and wants_profile(state.question):
                step("read_profile")
                if state.profile is not None and state.profile.decisive:
                    step("search", {"queries": self._first_queries(state)})
                    state.stop_reason = "profile"
                    return draft_from(cues, state.lines)
            if "interpret_dates" in enabled and cues.relative_dates:
                step("interpret_dates")
            if "decompose" in enabled and cues.compound:
                step("decompose")
            step("search", {"queries": self._first_queries(state)})
            self._descend(state, step, enabled)
            while "reflect" in enabled and state.reflections < s.max_reflections:
                result = step("reflect")
                if state.converged or not result.ok:
                    break
                fresh = result.data.get("new_queries") or []
                if not fresh:
                    state.converged, state.stop_reason = True, "nothing-new-to-try"
                    break
                step("search", {"queries": fresh})
                self._descend(state, step, enabled)
        except _Budget:
            state.stop_reason = "budget"
        if state.stop_reason is None:
            state.stop_reason = ("reflection-rounds-used" if "reflect" in enabled
                                 else "no-reflection")
        return draft_from(cues, state.lines)

    def _first_queries(self, state: ControllerState) -> list[str]:
        q = state.question
        out = [q, keyword_query(q)]
        out += state.subquestions
        if state.dates:
            dated = q
            for phrase, label in state.dates.items():
                dated = dated.replace(phrase, label)
            out.append(dated)
        return [x for x in dict.fromkeys(x.strip() for x in out) if x][:_MAX_FIRST_QUERIES]

    def _descend(self, state: ControllerState, step: Step, enabled: set[str]) -> None:
        """L2, then L3, in the sessions holding the best lines, while the question is uncovered."""
        cues = state.cues
        verdict = relevance.judge(cues, state.lines)
        # L1 holds facts about the user only: what the assistant said is read from L2 down.
        deeper = cues.exact_detail or cues.asks_assistant
        if verdict.enough and not deeper:
            return
        focus: list[str] = []
        for scored in relevance.rank(cues, state.lines, limit=20):
            sid = scored.line.session_id
            if sid not in focus:
                focus.append(sid)
            if len(focus) >= _FOCUS_SESSIONS:
                break
        for sid in focus:
            if "read_turns" in enabled and sid not in state.notes_read:
                step("read_turns", {"session_id": sid})
                verdict = relevance.judge(cues, state.lines)
            left = self.settings.max_raw_turns - state.raw_turns_used
            if "read_raw" in enabled and left > 0 and (cues.exact_detail or not verdict.enough):
                step("read_raw", {"session_id": sid, "query": state.question})
                verdict = relevance.judge(cues, state.lines)
            if verdict.enough and not deeper:
                break
