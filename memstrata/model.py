"""The domain model: who said what, when, and the layered views built from it.

A *session* is one contiguous conversation. It is split into *turns*; a turn
starts at a user message and holds the replies that follow it. Each session is
kept as four layers:

* L0 -- one :class:`L0Unit` per turn (summary, keywords, tags): the index.
* L1 -- :class:`KeyFacts`, built on first request and cached.
* L2 -- :class:`TurnNotes`, built on first request and cached.
* L3 -- the raw :class:`Turn` objects, verbatim.

Every record is scoped to one tenant and one user (:class:`Scope`) and carries a
deterministic id from :mod:`memstrata.ids`.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import IntEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memstrata.ids import content_hash, record_id

#: Ids may hold letters, digits and ``. _ : @ / + -``; no whitespace, no control
#: characters (they are used inside storage keys and deterministic hashes).
ID_PATTERN = r"^[A-Za-z0-9._:@/+\-]+$"
MAX_ID_LEN = 128
MAX_CONTENT_CHARS = 100_000
#: Session labels a JSONL line may carry, and the longest label value.
MAX_LABELS, MAX_LABEL_CHARS = 256, 1024
#: The key of the header line ``memstrata export`` writes first; ``ingest`` skips that line.
EXPORT_HEADER_KEY = "memstrata_export"

Identifier = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_LEN, pattern=ID_PATTERN)
]
Role = Literal["user", "assistant"]
_ID = re.compile(ID_PATTERN)


def is_identifier(value: str) -> bool:
    """Whether ``value`` is a valid id, matched as a whole.

    ``re.match`` with ``$`` would let ``"maya\n"`` through (``$`` also matches
    before a final newline), which pydantic's validator then refuses.
    """
    return 0 < len(value) <= MAX_ID_LEN and _ID.fullmatch(value) is not None


class Layer(IntEnum):
    """The four layers, coarse (cheap) to fine (expensive)."""

    L0 = 0
    L1 = 1
    L2 = 2
    L3 = 3

    @property
    def label(self) -> str:
        return f"L{int(self)}"


class Scope(BaseModel):
    """One tenant's one user: the unit every read and write is confined to."""

    model_config = ConfigDict(frozen=True)

    tenant_id: Identifier
    user_id: Identifier

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.user_id}"


class Message(BaseModel):
    """One message as it was sent."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: Annotated[str, StringConstraints(max_length=MAX_CONTENT_CHARS)]
    #: Display name of whoever wrote it (LoCoMo has two named people).
    speaker: str | None = None
    #: Id in the source system (LoCoMo ``dia_id`` such as ``D1:3``), kept for evidence scoring.
    source_id: str | None = None
    #: The kinds of values the redaction step masked in ``content`` (``email``...), sorted;
    #: empty when nothing was (and then left out of the stored JSON). See memstrata.redact.
    redacted: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)

    @property
    def who(self) -> str:
        return self.speaker or ("User" if self.role == "user" else "Assistant")


class Turn(BaseModel):
    """A user message and the replies to it (1-based ``index`` within its session)."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=1)
    messages: list[Message]

    def text(self, max_chars: int | None = None) -> str:
        """The turn as ``Speaker: content`` lines, optionally clipped per message."""
        lines = []
        for m in self.messages:
            body = m.content if max_chars is None else m.content[:max_chars]
            lines.append(f"{m.who}: {body}")
        return "\n".join(lines)

    @property
    def source_ids(self) -> list[str]:
        return [m.source_id for m in self.messages if m.source_id]


class SessionMeta(BaseModel):
    """What identifies a session and anchors its relative dates."""

    model_config = ConfigDict(frozen=True)

    scope: Scope
    session_id: Identifier
    session_date: datetime | None = None
    #: Free-form labels from the source (LoCoMo sample id, LongMemEval question id...).
    labels: dict[str, str] = Field(default_factory=dict)

    def record_id(self, layer: str, first: int = 0, last: int = 0) -> str:
        return record_id(
            self.scope.tenant_id, self.scope.user_id, self.session_id, layer, first, last
        )

    @property
    def date_text(self) -> str:
        return self.session_date.strftime("%Y-%m-%d") if self.session_date else "unknown date"

    def filled_from(self, later: "SessionMeta") -> "SessionMeta":
        """This metadata, with what it lacks taken from ``later`` (same session).

        The rule of every write path: the first date and labels a session gets
        stick; a later message fills only what is missing (a date when there is
        none, labels when there are none), so a message that carries neither
        never erases them. Labels are taken as a whole, never merged key by key.
        """
        date = self.session_date if self.session_date is not None else later.session_date
        labels = self.labels or later.labels
        if date == self.session_date and labels == self.labels:
            return self
        return self.model_copy(update={"session_date": date, "labels": dict(labels)})


class TurnEvent(BaseModel):
    """One message as producers send it (a JSONL line, a Kafka record value).

    This is the wire schema: ``memstrata ingest`` reads it from JSONL files and
    the stream processors read it from the turns topic.
    """

    model_config = ConfigDict(extra="ignore")

    tenant_id: Identifier
    user_id: Identifier
    session_id: Identifier
    session_date: datetime | None = None
    role: Role
    content: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONTENT_CHARS)]
    speaker: Annotated[str, StringConstraints(max_length=MAX_ID_LEN)] | None = None
    message_id: Annotated[str, StringConstraints(max_length=MAX_ID_LEN)] | None = None
    #: The session's labels (``memstrata export`` writes them on every line, so a
    #: re-ingest keeps them); None: the reader's own (``{"source": "jsonl"}``).
    labels: dict[Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_LEN)],
                 Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS)]] | None = Field(
        default=None, max_length=MAX_LABELS)
    #: The kinds a redaction step masked in ``content`` (an export writes them, so a
    #: re-ingest keeps the marker); None: nothing was.
    redacted: list[Annotated[str, StringConstraints(min_length=1, max_length=64)]] | None = (
        Field(default=None, max_length=64))

    @property
    def scope(self) -> Scope:
        return Scope(tenant_id=self.tenant_id, user_id=self.user_id)

    def message(self) -> Message:
        return Message(role=self.role, content=self.content, speaker=self.speaker,
                       source_id=self.message_id, redacted=tuple(self.redacted or ()))


class Session(BaseModel):
    """A whole session: metadata plus its turns in order."""

    meta: SessionMeta
    turns: list[Turn]

    @property
    def scope(self) -> Scope:
        return self.meta.scope

    @property
    def session_id(self) -> str:
        return self.meta.session_id


def turns_digest(turns: list[Turn]) -> str:
    """Fingerprint of a session's raw content: changes when any message changes."""
    return content_hash(*(f"{t.index}\x1e{m.role}\x1e{m.who}\x1e{m.content}"
                          for t in turns for m in t.messages))


class L0Unit(BaseModel):
    """The per-turn thematic summary that the retriever indexes."""

    id: str
    scope: Scope
    session_id: str
    session_date: datetime | None = None
    turn_index: int = Field(ge=1)
    summary: str
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    #: Source message ids (``D1:3``...) of the turn, for evidence-level scoring.
    source_ids: list[str] = Field(default_factory=list)
    #: Why the extractive fallback built this unit instead of the LLM (timeout,
    #: connection, unparsable...); None when the configured builder built it. A
    #: session holding such units is built again by the next ingest.
    fallback: str | None = None

    def index_text(self) -> str:
        """What the dense encoder sees: the summary followed by its keywords."""
        if not self.keywords:
            return self.summary
        return f"{self.summary} | {', '.join(self.keywords)}"


class KeyFact(BaseModel):
    """One L1 bullet, traceable to the turns it was drawn from."""

    text: str
    turn_indices: list[int] = Field(default_factory=list)


class TurnNote(BaseModel):
    """The L2 bullets of one turn."""

    turn_index: int = Field(ge=1)
    bullets: list[str]


class KeyFacts(BaseModel):
    """L1 of one session."""

    meta: SessionMeta
    builder: str
    facts: list[KeyFact]
    #: Why the extractive fallback built it instead of the LLM; None when the LLM did.
    fallback: str | None = None


class TurnNotes(BaseModel):
    """L2 of one session."""

    meta: SessionMeta
    builder: str
    notes: list[TurnNote]
    #: Why the extractive fallback built it instead of the LLM; None when the LLM did.
    fallback: str | None = None


class SessionHit(BaseModel):
    """A session returned by the retriever, with the turns that earned its score."""

    session_id: str
    score: float
    session_date: datetime | None = None
    #: L0 units of the session that matched, best first.
    units: list[L0Unit] = Field(default_factory=list)


class Evidence(BaseModel):
    """One view of one session that the controller has read (an element of V)."""

    session_id: str
    layer: Layer
    session_date: datetime | None = None
    #: The text shown to the reasoner (summary lines, fact bullets, notes or raw turns).
    content: str
    #: Turns this view covers (empty for whole-session layers).
    turn_indices: list[int] = Field(default_factory=list)

    @property
    def key(self) -> tuple[str, int, tuple[int, ...]]:
        return (self.session_id, int(self.layer), tuple(self.turn_indices))


class TraceStep(BaseModel):
    """One controller step, as recorded for the trace and the metrics."""

    step: int
    tool: str
    arguments: dict[str, object] = Field(default_factory=dict)
    sessions: list[str] = Field(default_factory=list)
    layer: Layer | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    ms: float = 0.0
    note: str | None = None
    #: L1/L2 reads: True when the layer came from the cache, False when this read built it
    #: (its builder calls are the ``llm:builder`` steps before it); None for other steps.
    cached: bool | None = None


_DIA = re.compile(r"^D(\d+):(\d+)$")


def parse_dia_id(dia_id: str) -> tuple[int, int] | None:
    """``D3:7`` -> (3, 7); anything else -> None."""
    m = _DIA.match(dia_id.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None
