"""What the tools return: small JSON shapes with their schema (the tools' ``outputSchema``).

Built from the client's types (:mod:`memstrata.model`, :mod:`memstrata.contract`)
and kept flat: scope and internal ids are left out, layers are named ``L0``..``L3``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memstrata.contract import Answer
from memstrata.model import KeyFacts, L0Unit, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.roles import DeleteReceipt

LayerName = Literal["L0", "L1", "L2", "L3"]


def layer_name(layer: int) -> LayerName:
    return ("L0", "L1", "L2", "L3")[int(layer)]  # type: ignore[return-value]


class Unit(BaseModel):
    """L0: one turn's summary, the index entry search matches."""

    turn_index: int
    summary: str
    keywords: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, u: L0Unit) -> "Unit":
        return cls(turn_index=u.turn_index, summary=u.summary, keywords=u.keywords)


class Hit(BaseModel):
    session_id: str
    session_date: datetime | None = None
    score: float
    #: The best matching turns' L0 summaries.
    units: list[Unit]


class SearchResult(BaseModel):
    user: str
    hits: list[Hit]
    #: What to call next to read deeper.
    next: str

    @classmethod
    def of(cls, user: str, hits: list[SessionHit]) -> "SearchResult":
        return cls(user=user, hits=[
            Hit(session_id=h.session_id, session_date=h.session_date, score=round(h.score, 6),
                units=[Unit.of(u) for u in h.units]) for h in hits],
            next="read_session(session_id, layers=[1]) for a session's key facts, [2] for "
                 "per-turn notes, [3] for the raw turns")


class Source(BaseModel):
    session_id: str
    session_date: datetime | None = None
    layer: LayerName
    turn_index: int | None = None
    text: str


class Depth(BaseModel):
    """How deep the answer had to read: the deepest layer, and per session drilled."""

    deepest_layer: LayerName | None = None
    sessions: dict[str, LayerName] = Field(default_factory=dict)
    sessions_drilled: int = 0
    haystack_sessions: int = 0


class AskResult(BaseModel):
    answer: str
    abstained: bool
    #: ``llm`` or ``offline-extractive``; ``fallback`` says why an LLM answer fell back.
    mode: str
    fallback: str | None = None
    sources: list[Source]
    depth: Depth
    steps: int
    stop_reason: str | None = None

    @classmethod
    def of(cls, a: Answer) -> "AskResult":
        s = a.summary
        return cls(
            answer=a.answer, abstained=a.abstained, mode=a.mode, fallback=a.fallback,
            sources=[Source(session_id=r.session_id, session_date=r.session_date,
                            layer=layer_name(r.layer), turn_index=r.turn_index, text=r.text)
                     for r in a.sources],
            depth=Depth(deepest_layer=None if s.deepest_layer is None
                        else layer_name(s.deepest_layer),
                        sessions={k: layer_name(v) for k, v in s.drill_depths.items()},
                        sessions_drilled=s.sessions_drilled,
                        haystack_sessions=s.haystack_sessions),
            steps=s.steps, stop_reason=s.stop_reason)


class SessionInfo(BaseModel):
    session_id: str
    session_date: datetime | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, m: SessionMeta) -> "SessionInfo":
        return cls(session_id=m.session_id, session_date=m.session_date, labels=m.labels)


class SessionList(BaseModel):
    user: str
    sessions: list[SessionInfo]


class Fact(BaseModel):
    text: str
    turn_indices: list[int] = Field(default_factory=list)


class Note(BaseModel):
    turn_index: int
    bullets: list[str]


class RawMessage(BaseModel):
    role: str
    content: str
    speaker: str | None = None
    message_id: str | None = None


class RawTurn(BaseModel):
    index: int
    messages: list[RawMessage]

    @classmethod
    def of(cls, t: Turn) -> "RawTurn":
        return cls(index=t.index, messages=[
            RawMessage(role=m.role, content=m.content, speaker=m.speaker,
                       message_id=m.source_id) for m in t.messages])


class SessionLayers(BaseModel):
    """The layers asked for; a layer not asked for is null."""

    user: str
    session: SessionInfo
    l0: list[Unit] | None = None
    l1: list[Fact] | None = None
    l2: list[Note] | None = None
    l3: list[RawTurn] | None = None

    def with_facts(self, f: KeyFacts) -> None:
        self.l1 = [Fact(text=x.text, turn_indices=x.turn_indices) for x in f.facts]

    def with_notes(self, n: TurnNotes) -> None:
        self.l2 = [Note(turn_index=x.turn_index, bullets=x.bullets) for x in n.notes]


class AddResult(BaseModel):
    session_id: str
    #: Messages new to memory; ``duplicates``: message ids it already held (same content).
    accepted: int
    duplicates: int
    #: ``stored`` (in the stores) or ``broker`` (acknowledged by Kafka, stored shortly).
    durability: str


class DeleteResult(BaseModel):
    user: str
    session_id: str | None = None
    #: Records removed, by store.
    removed: dict[str, int]
    #: False: a store failed; calling the same tool again finishes the job.
    complete: bool
    errors: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, r: DeleteReceipt) -> "DeleteResult":
        return cls(user=r.scope.user_id, session_id=r.session_id, removed=r.removed,
                   complete=r.complete, errors=r.errors)
