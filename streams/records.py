"""A record of the turns or control topic as the broker gave it, and reading it again.

The processor, its notices and its outage all speak of consumed records; the
type lives here so that none of them has to import the processor to name it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memstrata.model import Scope
from memstrata.wire import TurnEvent

__all__ = ["EndOffsets", "Record", "Replay", "belongs"]


@dataclass(frozen=True)
class Record:
    """One consumed record, as the broker gave it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    #: When the broker got it (the record's timestamp, seconds); None: not known. The
    #: freshness histogram counts from here, not from the event's own time, so a
    #: backfill of old events is not mistaken for a worker behind the topic.
    received: float | None = None


#: Reads the turns topic again: {partition: (from offset, to offset)} -> records in order.
Replay = Callable[[dict[int, tuple[int, int]]], Awaitable[list[Record]]]


#: End offsets of every partition of the turns topic now: {partition: end offset}.
EndOffsets = Callable[[], Awaitable[dict[int, int]]]


def belongs(rec: Record, scope: Scope, session_id: str | None) -> bool:
    """Whether ``rec`` is a turn of this user (and session, unless None): what a delete's
    replay keeps. A record that does not parse belongs to nobody."""
    got = _record_session(rec)
    return got is not None and got[0] == scope and session_id in (None, got[1])


def _record_session(rec: Record) -> tuple[Scope, str] | None:
    try:
        ev = TurnEvent.model_validate_json(rec.value or b"")
    except Exception:  # noqa: BLE001
        return None
    return ev.scope, ev.session_id
