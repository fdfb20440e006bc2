"""The turns topic's wire contract, shared by everything that writes or reads it.

The query service publishes turn events and the stream worker consumes them;
both import this one definition (the core imports no service, so it lives
here), which keeps producer and consumer from drifting apart. Every value is
UTF-8 JSON; the key is ``tenant/user/`` (:func:`user_key`, ADR 0005), so every
event of a user, all sessions and the deletes, stays in order on one partition.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from memstrata.model import Identifier, Message, Role, Scope, SessionMeta

__all__ = ["CONTROL_TOPIC", "EVENT_TIME_RANGE", "MAX_EVENT_TIME", "MESSAGE_ID_PATTERN",
           "MIN_EVENT_TIME", "L0_TOPIC", "TURNS_TOPIC", "ControlEvent", "ControlType", "MessageId",
           "TurnEvent", "WireEvent", "check_event_time", "event_key", "is_message_id", "user_key"]

TURNS_TOPIC = "memstrata.turns.v1"
#: Closes and deletes, keyed and partitioned like the turns (see :class:`ControlEvent`).
CONTROL_TOPIC = "memstrata.control.v1"
#: What the stream worker indexed (its notices are the receipts of closes, too).
L0_TOPIC = "memstrata.l0.v1"

#: Message ids come from other systems (``D1:3``, ``chat#17``): any printable text
#: without whitespace or control characters, at most 128 characters.
MESSAGE_ID_PATTERN = r"^[^\s\x00-\x1f\x7f]+$"
MessageId = Annotated[str, StringConstraints(min_length=1, max_length=128,
                                             pattern=MESSAGE_ID_PATTERN)]
_MESSAGE_ID = re.compile(MESSAGE_ID_PATTERN)

#: Event times (``ts``, ``session_date``) must lie in this range, in UTC (a time
#: without a zone is read as UTC). Inside it ``datetime.timestamp()``, zone
#: conversion and date arithmetic of up to a year either way cannot overflow;
#: a year-1 or year-9999 date is a client bug, refused at the edge.
MIN_EVENT_TIME = datetime(1900, 1, 1, tzinfo=UTC)
MAX_EVENT_TIME = datetime(9999, 1, 1, tzinfo=UTC)
EVENT_TIME_RANGE = f"from {MIN_EVENT_TIME:%Y-%m-%d} to before {MAX_EVENT_TIME:%Y-%m-%d} (UTC)"


def is_message_id(value: str) -> bool:
    """Whether ``value`` is a valid message id (the whole text: a trailing newline is not)."""
    return 0 < len(value) <= 128 and _MESSAGE_ID.fullmatch(value) is not None


def check_event_time(value: datetime) -> datetime:
    """``value`` if it lies in the event-time range, else ValueError naming the range.

    The one place the rule lives: the query service builds a :class:`TurnEvent`
    (and so refuses with INVALID_ARGUMENT) and the stream worker decodes one
    (and so dead-letters with ``bad_field``).
    """
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        ok = MIN_EVENT_TIME <= aware < MAX_EVENT_TIME
        if ok:
            aware.timestamp()  # an exotic tzinfo could still fail here
    except (OverflowError, ValueError, OSError):
        ok = False
    if not ok:
        raise ValueError(f"must be {EVENT_TIME_RANGE}, got {value.isoformat()[:40]}")
    return value


def event_key(tenant_id: str, user_id: str, session_id: str | None) -> bytes:
    """The session key ``tenant/user/session`` (``tenant/user/`` without a session).

    Turn and control records were keyed so before ADR 0005; the worker still
    accepts that form, and the L0 notices keep it (a close's receipt names its session).
    """
    return f"{tenant_id}/{user_id}/{session_id or ''}".encode()


def user_key(tenant_id: str, user_id: str) -> bytes:
    """The record key of every turn and control event: ``tenant/user/`` (ADR 0005).

    One key per user puts all of a user's sessions and their deletes on one
    partition of ``turns`` and ``control`` (co-partitioned), so one worker
    orders them by the log, whatever the number of replicas and workers.
    """
    return event_key(tenant_id, user_id, None)


class WireEvent(BaseModel):
    """A topic record: strict (unknown fields refused), immutable, compact JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_bytes(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


class TurnEvent(WireEvent):
    """``memstrata.turns.v1``: one chat message.

    The schema only; sizes are limits of the deployment, applied with it by
    :func:`memstrata.limits.validate_turn` wherever an event comes in.
    """

    v: Literal[1] = 1
    tenant_id: Identifier
    user_id: Identifier
    session_id: Identifier
    #: Unique within the session; a message id seen before changes nothing (dedupe).
    message_id: MessageId
    role: Role
    content: str
    #: When the message was sent (freshness is measured from here).
    ts: datetime
    session_date: datetime | None = None
    speaker: str | None = None
    #: Free-form session labels (source, sample id); the session's first labels stick
    #: (:meth:`SessionMeta.filled_from`). Their count and lengths are limits
    #: (:class:`memstrata.limits.TurnLimits`), checked with the content's.
    labels: dict[Annotated[str, StringConstraints(min_length=1)], str] = Field(
        default_factory=dict)
    #: The kinds the query service's redaction step masked in ``content`` (memstrata.redact);
    #: None (left out of the record) when nothing was.
    redacted: list[Annotated[str, StringConstraints(min_length=1, max_length=64)]] | None = (
        Field(default=None, max_length=64))

    @field_validator("ts", "session_date")
    @classmethod
    def _in_range(cls, value: datetime | None) -> datetime | None:
        return None if value is None else check_event_time(value)

    @property
    def scope(self) -> Scope:
        return Scope(tenant_id=self.tenant_id, user_id=self.user_id)

    @property
    def key(self) -> bytes:
        """``tenant/user/``: the user's partition (ADR 0005); sessions are apart in the worker."""
        return user_key(self.tenant_id, self.user_id)

    @property
    def legacy_key(self) -> bytes:
        """The key before ADR 0005 (``tenant/user/session``), still accepted when read."""
        return event_key(self.tenant_id, self.user_id, self.session_id)

    def meta(self) -> SessionMeta:
        return SessionMeta(scope=self.scope, session_id=self.session_id,
                           session_date=self.session_date, labels=dict(self.labels))

    def message(self) -> Message:
        return Message(role=self.role, content=self.content, speaker=self.speaker,
                       source_id=self.message_id, redacted=tuple(self.redacted or ()))


ControlType = Literal["close_session", "delete_session", "delete_user"]


class ControlEvent(WireEvent):
    """``memstrata.control.v1``: close or delete, ordered after the turns it concerns.

    ``after`` maps a partition of the turns topic to an offset: the worker
    applies the event once it has stored every turn below that offset on that
    partition (the producer reads it from the turns it sent, or the topic's end
    offsets), so a delete never overtakes the turns it deletes and a turn
    produced after it is new data. Both ``memstrata produce`` and the query
    service (in Kafka mode) send it, so it lives here with :class:`TurnEvent`.
    """

    v: Literal[1] = 1
    type: ControlType
    tenant_id: Identifier
    user_id: Identifier
    session_id: Identifier | None = None
    ts: datetime
    after: dict[int, int] = Field(default_factory=dict)

    @property
    def scope(self) -> Scope:
        return Scope(tenant_id=self.tenant_id, user_id=self.user_id)

    @property
    def key(self) -> bytes:
        """``tenant/user/`` for every type: on the partition of the user's turns (ADR 0005)."""
        return user_key(self.tenant_id, self.user_id)

    @property
    def legacy_key(self) -> bytes:
        """The key before ADR 0005 (the session's, or ``tenant/user/``), still accepted."""
        sid = None if self.type == "delete_user" else self.session_id
        return event_key(self.tenant_id, self.user_id, sid)
