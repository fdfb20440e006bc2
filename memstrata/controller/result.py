"""What :meth:`Controller.answer` returns: the answer, where it came from, how it was found."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memstrata.evidence.extract import ABSTAIN_TEXT
from memstrata.evidence.trace import TraceSummary
from memstrata.model import Layer, TraceStep

__all__ = ["ABSTAIN_TEXT", "Answer", "SourceRef"]


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
