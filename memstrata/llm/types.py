"""The interface every layer builder implements, LLM-backed or not.

memstrata asks three things of a "language model" when it builds memory:
summarise the turns of a window (L0), pull key facts out of a session (L1) and
split each turn into atomic notes (L2). :class:`LayerBuilder` names those
three tasks; :mod:`memstrata.llm.extractive` answers them from the text itself
(the offline default) and :mod:`memstrata.llm.openai_compat` asks an
OpenAI-compatible endpoint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, Field

from memstrata.model import KeyFact, SessionMeta, Turn, TurnNote

T = TypeVar("T")


#: Why an LLM call failed, as the ``reason`` label of ``memstrata_llm_fallbacks_total``
#: (a fixed set, so the metric's label values stay bounded). ``budget``: the answer's
#: time budget ran out (see :mod:`memstrata.llm.budget`).
FAILURE_REASONS = ("timeout", "connection", "http", "unavailable", "unparsable", "truncated",
                   "incomplete", "budget", "error")


class LLMError(RuntimeError):
    """The model could not be reached or returned something unusable.

    ``reason`` is one of :data:`FAILURE_REASONS`; ``role`` the role whose call failed.
    """

    def __init__(self, message: str, *, reason: str = "error", role: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason in FAILURE_REASONS else "error"
        self.role = role


class TurnSummary(BaseModel):
    """L0 content for one turn, before ids and scope are attached."""

    turn_index: int = Field(ge=1)
    summary: str
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    #: Set when the LLM failed and the extractive builder wrote this summary (the reason).
    fallback: str | None = None


class Window(BaseModel):
    """A slice of a session handed to the L0 builder.

    ``turns`` are in order; ``targets`` are the indices to summarise. The
    turns not in ``targets`` (the overlap) are context only: they were
    summarised by the previous window.
    """

    meta: SessionMeta
    turns: list[Turn]
    targets: list[int]


@dataclass(frozen=True)
class Built(Generic[T]):
    """A lazily built layer, and why the fallback built it (None: built as configured)."""

    items: list[T]
    fallback: str | None = None


class LayerBuilder(ABC):
    """Builds L0, L1 and L2 content. ``version`` keys the L1/L2 cache."""

    #: Short name (``extractive``, ``openai``).
    name: str = "builder"

    @property
    @abstractmethod
    def version(self) -> str:
        """Changes whenever output for the same input could change (model, prompt, code)."""

    @abstractmethod
    def summarize_window(self, window: Window) -> list[TurnSummary]:
        """One :class:`TurnSummary` per target turn, in order."""

    @abstractmethod
    def key_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[KeyFact]:
        """5-25 self-contained facts about the user, each with its source turns."""

    @abstractmethod
    def turn_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[TurnNote]:
        """Atomic bullets for every turn, in turn order."""

    def build_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> Built[KeyFact]:
        """:meth:`key_facts`, saying whether a fallback built them (see ``FallbackBuilder``)."""
        return Built(self.key_facts(meta, turns))

    def build_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> Built[TurnNote]:
        """:meth:`turn_notes`, saying whether a fallback built them."""
        return Built(self.turn_notes(meta, turns))
