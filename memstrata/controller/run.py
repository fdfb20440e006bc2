"""``Controller.answer``: controller, then organized notes, then the answer.

The one entry point for answering a question about a user's history. It
picks the policy (LLM tool calling when a chat client is configured, the rule
policy offline, plain top-K when the controller is ablated), runs it over the
memory tools, hands the evidence and the draft to the notes and answer steps,
and returns the answer with its sources, the full trace and its summary.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memstrata.config import ConfigError
from memstrata.controller.config import ControllerSettings
from memstrata.evidence.cues import detect_cues
from memstrata.controller.policy_rules import RulePolicy, RuleReflector
from memstrata.controller.policy_topk import TopKPolicy
from memstrata.contract import Answer, SourceRef
from memstrata.controller.state import ControllerState, profile_block, render_evidence
from memstrata.evidence.extract import ABSTAIN_TEXT
from memstrata.profiles.query import ProfileAnswer
from memstrata.evidence.lines import EvidenceLine
from memstrata.controller.tools import TOOL_NAMES, MemoryTools, Reflector
from memstrata.evidence.trace import Trace, TraceSummary
from memstrata.llm.budget import AnswerBudget, within
from memstrata.llm.types import LLMError
from memstrata.llm.usage import ROLES, PriceTable, Role, UsageMeter
from memstrata.model import Layer, Scope, SessionMeta, TraceStep
from memstrata.roles import HostedMemory, MemoryReader, WarmsUp
from memstrata.synth.answer import (
    AnswerGenerator,
    Draft,
    ExtractiveAnswer,
    Generated,
    LLMAnswer,
)
from memstrata.synth.notes import ExtractiveNotes, LLMNotes, NotesSynthesizer
from memstrata.telemetry.genai import traced_answer

if TYPE_CHECKING:
    from memstrata.config import Settings
    from memstrata.llm.openai_compat import ChatClient

OFFLINE_MODE = "offline-extractive"
LLM_MODE = "llm"
#: The trace step that opens an answer given offline because the LLM failed.
FALLBACK_STEP = "llm-fallback"

log = logging.getLogger(__name__)


class Policy(Protocol):
    name: str

    def run(self, state: ControllerState, tools: MemoryTools, trace: Trace) -> Draft | None: ...


#: Of an answer's budget, this share (within these bounds, in seconds) is kept for the
#: offline answer that replaces an LLM path that ran out of time.
RESERVE_SHARE, MIN_RESERVE_S, MAX_RESERVE_S = 0.25, 1.0, 10.0
#: Left of a caller's deadline to send the answer back.
REPLY_MARGIN_S = 0.2

#: The retriever's default query limit (``MEMSTRATA_MAX_QUERY_CHARS``).
DEFAULT_MAX_QUERY_CHARS = 2000


def open_chat_client(settings: "Settings",
                     meter: UsageMeter | None = None) -> "ChatClient | None":
    """A chat client when ``MEMSTRATA_LLM_BACKEND=openai``; None for the offline mode."""
    if settings.llm_backend != "openai":
        return None
    from memstrata.llm.openai_compat import ChatClient

    return ChatClient(settings, meter or UsageMeter())


class Controller:
    """Answers questions from one memory reader; safe to call from several threads at once.

    Each :meth:`answer` keeps its state in its own objects; the only shared
    state, the participants cache, is guarded by a lock.

    The controller sees memory only through :class:`~memstrata.roles.MemoryReader`,
    so a local :class:`~memstrata.memory.Memory` and a remote reader answer alike.
    ``max_query_chars`` is the reader's query limit: search queries are clipped to
    it rather than refused.
    """

    def __init__(self, memory: MemoryReader, settings: ControllerSettings,
                 chat: "ChatClient | None" = None, prices: PriceTable | None = None, *,
                 max_query_chars: int = DEFAULT_MAX_QUERY_CHARS) -> None:
        self.memory = memory
        self.max_query_chars = max_query_chars
        self.settings = settings
        if self.settings.policy == "llm" and chat is None:
            raise ConfigError("MEMSTRATA_CONTROLLER_POLICY=llm needs an LLM: set "
                              "MEMSTRATA_LLM_BACKEND=openai and MEMSTRATA_LLM_BASE_URL")
        self.chat = chat if self.settings.policy != "rules" else None
        self.prices = prices or self.settings.prices()
        self._speakers: dict[tuple[Scope, str, int], tuple[str, ...]] = {}
        self._speakers_lock = threading.Lock()
        self._warmed = False
        self.notes: NotesSynthesizer
        self.generator: AnswerGenerator
        #: The offline steps, also used when the LLM fails (MEMSTRATA_CONTROLLER_ON_LLM_ERROR).
        self._offline: tuple[NotesSynthesizer, AnswerGenerator] = (ExtractiveNotes(),
                                                                   ExtractiveAnswer())
        if self.chat is not None:
            self.notes, self.generator = LLMNotes(self.chat), LLMAnswer(self.chat)
        else:
            self.notes, self.generator = self._offline

    @classmethod
    def open(cls, memory: MemoryReader, settings: ControllerSettings, *,
             app_settings: "Settings", meter: UsageMeter | None = None) -> "Controller":
        """The controller the settings describe (LLM when one is configured, else offline).

        ``app_settings`` (LLM backend, query limit) are the entry point's loaded
        settings; ``meter`` counts the answer LLM's usage (a fresh one when None).
        Any reader will do: a local memory, a remote client.
        """
        chat = open_chat_client(app_settings, meter) if settings.policy != "rules" else None
        return cls(memory, settings, chat, max_query_chars=app_settings.max_query_chars)

    @classmethod
    def for_memory(cls, memory: HostedMemory, settings: ControllerSettings) -> "Controller":
        """:meth:`open` over a local memory, with its settings and usage meter."""
        return cls.open(memory, settings, app_settings=memory.settings, meter=memory.meter)

    def with_settings(self, settings: "ControllerSettings | None") -> "Controller":
        """This controller, or one like it (same reader, chat client, prices and query
        limit) with ``settings``: how every executor honours a request's own options."""
        if settings is None or settings == self.settings:
            return self
        return Controller(self.memory, settings, self.chat, self.prices,
                          max_query_chars=self.max_query_chars)

    @property
    def mode(self) -> str:
        return LLM_MODE if self.chat is not None else OFFLINE_MODE

    def _policy(self, llm: bool) -> tuple[Policy, Reflector | None, ControllerSettings]:
        s = self.settings
        if not s.use_controller:
            return TopKPolicy(s), None, s.model_copy(update={"auto_drill": 0})
        if llm and self.chat is not None:
            from memstrata.controller.policy_llm import LLMPolicy, LLMReflector

            return LLMPolicy(self.chat, s), LLMReflector(self.chat, s), s
        return RulePolicy(s), RuleReflector(), s

    @traced_answer  # an invoke_agent span, a child span per step (when tracing is on)
    def answer(self, scope: Scope, question: str, asked_on: datetime | None = None, *,
               on_step: Callable[[TraceStep], None] | None = None,
               deadline: float | None = None) -> Answer:
        """Answer ``question`` from ``scope``'s memory as of ``asked_on``.

        ``on_step`` sees each trace step as it is recorded; an exception it raises
        stops the answer (how a cancelled remote call stops its work).

        The whole answer has one time budget (``MEMSTRATA_CONTROLLER_ANSWER_BUDGET_S``,
        or less when the caller's ``deadline``, a :func:`time.monotonic` instant, comes
        first): see :meth:`_budget`. When an LLM call fails (after its retries, or for
        want of time) the question is answered again offline, marked, unless
        ``MEMSTRATA_CONTROLLER_ON_LLM_ERROR=fail``: then the
        :class:`~memstrata.llm.types.LLMError` is raised.
        """
        budget, total_s = self._budget(deadline)
        first = Trace(on_step=on_step)
        with within(budget):
            if self.chat is None:
                return self._answer(scope, question, asked_on, first, llm=False)
            self._warm_encoder()
            try:
                return self._answer(scope, question, asked_on, first, llm=True)
            except LLMError as exc:
                if self.settings.on_llm_error == "fail":
                    raise
                role: Role = exc.role if exc.role in ROLES else "controller"  # type: ignore[assignment]
                meter = getattr(self.chat, "meter", None)  # test doubles may have none
                if meter is not None:
                    meter.record_fallback(role, exc.reason)
                log.warning("LLM failed while answering (%s: %s); answering offline: %s",
                            role, exc.reason, exc)
                # The failed attempt's time and LLM calls are part of this answer's cost.
                again = Trace(on_step=on_step, started=first.started,
                              cpu_started=first.cpu_started,
                              llm_calls=list(first.llm_calls), ms_llm=first.ms_llm,
                              ms_memory=first.ms_memory, cpu_ms_memory=first.cpu_ms_memory)
                return self._answer(scope, question, asked_on, again, llm=False,
                                    failure=(f"{role}: {exc.reason}", str(exc)),
                                    budget_s=total_s)

    def _warm_encoder(self) -> None:
        """Load a local memory's query encoder on a thread of its own, once.

        A fresh process (``memstrata ask``) loads the encoder at its first search: about
        2 s. The LLM path spends its first seconds waiting on the model, so the load is
        done then, not in the reserve of an offline answer that must follow in time.
        """
        memory = self.memory
        if not isinstance(memory, WarmsUp) or self._warmed:
            return
        self._warmed = True

        def warm() -> None:
            try:
                memory.warm_up()
            except Exception:
                log.debug("warming the query encoder failed", exc_info=True)

        threading.Thread(target=warm, name="memstrata-warm-encoder", daemon=True).start()

    def _budget(self, deadline: float | None) -> tuple[AnswerBudget, float]:
        """The LLM path's budget, and the whole answer's seconds.

        The whole answer gets ``answer_budget_s`` or what is left to ``deadline`` (less a
        moment to send the reply), whichever is shorter. LLM calls must end a reserve
        earlier (a quarter of it, 1-10 s): the offline answer that replaces an LLM path
        that ran out of time is given in that reserve (a first search in a fresh process
        loads the query encoder: about 2 s on a busy 2-core machine).
        """
        total = self.settings.answer_budget_s
        if deadline is not None:
            total = min(total, max(0.0, deadline - time.monotonic() - REPLY_MARGIN_S))
        reserve = min(total, min(MAX_RESERVE_S, max(MIN_RESERVE_S, total * RESERVE_SHARE)))
        return AnswerBudget(total - reserve,
                            skip_after=self.settings.llm_skip_after_timeouts), total

    def _answer(self, scope: Scope, question: str, asked_on: datetime | None, trace: Trace,
                *, llm: bool, failure: tuple[str, str] | None = None,
                budget_s: float | None = None) -> Answer:
        if failure is not None:
            args: dict[str, object] = {"fallback": failure[0]}
            if budget_s is not None:
                args["budget_s"] = round(budget_s, 3)
            trace.add(0, FALLBACK_STEP, arguments=args, note=f"answered offline: {failure[1]}")
        with trace.memory_time():
            metas = self.memory.sessions(scope)
            participants = self._participants(scope, metas)
        cues = detect_cues(question, asked_on, participants)
        state = ControllerState(scope=scope, question=question.strip(), asked_on=asked_on,
                                cues=cues, sessions={m.session_id: m for m in metas},
                                participants=participants)
        policy, reflector, tool_settings = self._policy(llm)
        tools = MemoryTools(self.memory, state, tool_settings, trace, reflector,
                            max_query_chars=self.max_query_chars)
        trace.add(0, "cues", arguments={"answer_type": cues.answer_type, "cues": cues.labels,
                                        "names": list(cues.names)})
        draft = policy.run(state, tools, trace) if metas else None
        if not metas:
            state.stop_reason = "no-memory"
        state.draft = draft.text if draft else None
        s = self.settings
        used_draft = draft if s.use_draft else None
        evidence_text = render_evidence(state, s.max_evidence_chars) if llm else ""
        notes_step, generator = (self.notes, self.generator) if llm else self._offline
        step = state.steps + 1
        notes = None
        if s.use_notes:
            t0 = time.perf_counter()
            notes = notes_step.organize(cues, state.lines, evidence_text,
                                        used_draft.text if used_draft else None, asked_on,
                                        trace, step)
            block = profile_block(state)
            if block:  # the notes carry the profile bullets (with sources) to the answer step
                notes.text = f"{block}\n\n{notes.text}" if notes.text else block
            trace.add(step, "notes", ms=(time.perf_counter() - t0) * 1000,
                      note=f"{len(notes.relevant)} relevant lines, {len(notes.items)} items")
        t0 = time.perf_counter()
        decided = state.profile if (not llm and state.profile is not None
                                    and state.profile.decisive) else None
        if decided is not None:
            # Offline, the profile's answer is the answer: it is about the question's target,
            # never a line about someone else; an unstated attribute abstains.
            generated = Generated(decided.answer or ABSTAIN_TEXT, abstained=decided.abstain)
        else:
            generated = generator.generate(cues, notes, state.lines, evidence_text, used_draft,
                                           asked_on, trace, step + 1)
            found = state.profile
            if (not llm and found is not None and found.abstain and not generated.abstained
                    and not any(found.supports(ln.text) for ln in generated.sources[:3])):
                # The target's profile has no such attribute and no line found names the
                # target with it: whatever was found is about someone else.
                generated = Generated(ABSTAIN_TEXT, abstained=True)
        trace.add(step + 1, "answer", ms=(time.perf_counter() - t0) * 1000,
                  sessions=list(dict.fromkeys(ln.session_id for ln in generated.sources)),
                  note="abstained" if generated.abstained else None)
        sources = [self._source(scope, ln, trace) for ln in generated.sources[:3]]
        if decided is not None and not decided.abstain:
            sources = self._profile_sources(decided, state)[:3]
        trace.finish()
        return Answer(
            question=question, asked_on=asked_on, answer=generated.answer,
            abstained=generated.abstained, mode=LLM_MODE if llm else OFFLINE_MODE,
            fallback=failure[0] if failure else None, sources=sources,
            draft=state.draft, notes=notes.text if notes is not None else None,
            reasoning=generated.reasoning, steps=trace.steps,
            summary=self._summary(policy.name, state, trace),
        )

    def _participants(self, scope: Scope, metas: list[SessionMeta]) -> tuple[str, ...]:
        """Who talks in the user's conversations, read from the latest session (cached)."""
        if not metas:
            return ()
        latest = max(metas, key=lambda m: (m.session_date is not None, m.session_date,
                                           m.session_id))
        key = (scope, latest.session_id, len(metas))
        with self._speakers_lock:
            hit = self._speakers.get(key)
        if hit is not None:
            return hit
        turns = self.memory.raw(scope, latest.session_id)  # outside the lock: I/O
        found = tuple(dict.fromkeys(m.who for t in turns for m in t.messages))
        with self._speakers_lock:
            if len(self._speakers) > 10_000:
                self._speakers.clear()
            self._speakers[key] = found
        return found

    @staticmethod
    def _profile_sources(found: ProfileAnswer, state: ControllerState) -> list[SourceRef]:
        """One source per profile bullet used: its first turn, shown as the bullet."""
        out = []
        for h in found.hits:
            who = "the user" if h.entity_id == "user" and h.entity_name == "you" else \
                h.entity_name
            for src in h.sources[:1]:
                meta = state.sessions.get(src.session_id)
                out.append(SourceRef(
                    session_id=src.session_id,
                    session_date=meta.session_date if meta else None, layer=Layer.L1,
                    turn_index=src.turn, text=f"Profile of {who}: {h.text}",
                    source_ids=list(src.message_ids)))
        return out

    def _source(self, scope: Scope, line: EvidenceLine, trace: Trace) -> SourceRef:
        ids = list(line.source_ids)
        if not ids and line.turn_indices:
            with trace.memory_time():
                turns = self.memory.raw(scope, line.session_id, line.turn_indices)
            ids = [sid for t in turns for sid in t.source_ids]
        text = line.shown if not line.speaker else f"{line.speaker}: {line.shown}"
        return SourceRef(session_id=line.session_id, session_date=line.session_date,
                         layer=line.layer, turn_index=line.turn_index, text=text,
                         source_ids=ids)

    def _summary(self, policy: str, state: ControllerState, trace: Trace) -> TraceSummary:
        cost, unpriced = trace.cost(self.prices)
        layers = [e.layer for e in state.evidence.values()]
        haystack = len(state.sessions)
        tool_steps = [st for st in trace.steps if st.tool in TOOL_NAMES]
        return TraceSummary(
            policy=policy,
            ablations=self.settings.ablations,
            deepest_layer=max(layers) if layers else None,
            drill_depths=dict(state.drilled),
            sessions_drilled=len(state.drilled),
            haystack_sessions=haystack,
            drilled_share=len(state.drilled) / haystack if haystack else 0.0,
            steps=state.steps,
            llm_calls=len(trace.llm_calls),
            tool_calls=len(tool_steps),
            tool_errors=state.errors,
            evidence_items=state.size,
            reflections=state.reflections,
            profiles_read=state.profile_reads,
            nudges=state.nudges,
            stop_reason=state.stop_reason,
            tokens=trace.tokens_by_role(),
            cost_usd=round(cost, 8),
            unpriced_models=unpriced,
            ms_total=round(trace.ms_total, 3),
            ms_llm=round(trace.ms_llm, 3),
            ms_memory=round(trace.ms_memory, 3),
            cpu_ms_total=round(trace.cpu_ms_total, 3),
            cpu_ms_memory=round(trace.cpu_ms_memory, 3),
        )

