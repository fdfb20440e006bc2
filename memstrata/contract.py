"""What the reader contract returns and raises, free of any engine.

:mod:`memstrata.roles` says what a reader and a writer can do; this module
holds the values and failures that cross that line and the wire: the
controller's :class:`Answer` with its :class:`SourceRef` list and
:class:`TraceSummary`, and the errors a caller acts on,
:class:`SessionNotFound`, :class:`QueryError` and :class:`DataDirLocked` (a
writer refused because another process holds the data dir; the store's lock
raises it and :mod:`memstrata.roles` names it too). They live here, not with the
code that produces them (the controller, the lazy layers, the retriever), so a
client of the query service can use them without loading that code: importing
:mod:`memstrata.client` must not pull in numpy, the stores, the encoder or the
controller. Only pydantic and :mod:`memstrata.model` are imported.

The producing modules re-export these names (``memstrata.controller.Answer``,
``memstrata.layers.lazy.SessionNotFound`` ...), so both spellings are one class.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memstrata.model import Layer, TraceStep

__all__ = ["Answer", "DataDirLocked", "QueryError", "RoleTokens", "SessionNotFound",
           "SourceRef", "TraceSummary"]


class DataDirLocked(RuntimeError):
    """Another process holds the embedded data dir for writing.

    Carries what an operator needs to act: the data dir and who holds it.
    """

    def __init__(self, data_dir: str, pid: int | None, host: str | None,
                 command: str | None) -> None:
        self.data_dir = data_dir
        self.pid = pid
        self.host = host
        self.command = command
        holder = f"pid {pid} on {host}" if pid else "another process"
        if command:
            holder += f" ({command})"
        super().__init__(
            f"the data dir {data_dir} is held for writing by {holder}; embedded stores admit "
            f"one writer: stop that process, run this command through it, or use server backends"
        )


class SessionNotFound(KeyError):
    """The scope has no session with that id."""


class QueryError(ValueError):
    """A search request breaks a limit; the message names the field and the limit."""


class RoleTokens(BaseModel):
    """Calls and tokens of one role; ``estimated`` when no tokenizer counted them."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    estimated: bool = False


class TraceSummary(BaseModel):
    """Per-question numbers for reports and metrics."""

    policy: str
    ablations: list[str] = Field(default_factory=list)
    deepest_layer: Layer | None = None
    #: Deepest layer reached in each drilled session (the depth distribution counts these).
    drill_depths: dict[str, Layer] = Field(default_factory=dict)
    sessions_drilled: int = 0
    haystack_sessions: int = 0
    #: sessions drilled / sessions of the user (APDMem's retrieval selectivity).
    drilled_share: float = 0.0
    steps: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    evidence_items: int = 0
    reflections: int = 0
    nudges: int = 0
    #: Reads of the entity and persona profiles (the cross-session layer before L0).
    profiles_read: int = 0
    stop_reason: str | None = None
    tokens: dict[str, RoleTokens] = Field(default_factory=dict)
    cost_usd: float = 0.0
    #: Models that had tokens but no price (counted as free in ``cost_usd``).
    unpriced_models: list[str] = Field(default_factory=list)
    ms_total: float = 0.0
    ms_llm: float = 0.0
    ms_memory: float = 0.0
    #: CPU time of the answering thread, in all and inside memory reads: unlike wall
    #: time it does not grow when other processes (or other questions answered on
    #: other threads) compete for the cores. Work the encoder hands to its own
    #: thread pool is not counted.
    cpu_ms_total: float = 0.0
    cpu_ms_memory: float = 0.0
    #: The answer's OpenTelemetry trace (32 hex digits), to look it up in a trace viewer;
    #: None when tracing is off (docs/tracing.md).
    trace_id: str | None = None

    @property
    def ms_overhead(self) -> float:
        """Time spent in the controller itself: neither waiting on an LLM nor in memory reads."""
        return max(0.0, self.ms_total - self.ms_llm - self.ms_memory)

    @property
    def cpu_ms_overhead(self) -> float:
        """The controller's own CPU time (waiting on an LLM costs no CPU)."""
        return max(0.0, self.cpu_ms_total - self.cpu_ms_memory)


class SourceRef(BaseModel):
    """One piece of evidence the answer rests on, traceable to a raw turn."""

    session_id: str
    session_date: datetime | None = None
    layer: Layer
    turn_index: int | None = None
    text: str
    #: Raw message ids of that turn (LoCoMo ``D3:7``), when the source keeps them.
    source_ids: list[str] = Field(default_factory=list)


class Answer(BaseModel):
    """A final answer with its sources, the controller's draft and notes, and the trace."""

    question: str
    asked_on: datetime | None = None
    answer: str
    abstained: bool = False
    #: ``offline-extractive`` (rule policy, quoted answer) or ``llm``.
    mode: str
    #: Set when an LLM was configured but failed, so this answer was given offline
    #: (``<role>: <reason>``, e.g. ``controller: timeout``); see MEMSTRATA_CONTROLLER_ON_LLM_ERROR.
    fallback: str | None = None
    sources: list[SourceRef] = Field(default_factory=list)
    draft: str | None = None
    notes: str | None = None
    reasoning: str | None = None
    steps: list[TraceStep] = Field(default_factory=list)
    summary: TraceSummary
