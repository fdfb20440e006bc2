"""What a batch asks to publish, and how it is sent: dead letters and L0 notices.

The processor only says what to publish; the caller sends it (before the
batch is acknowledged) through :func:`publish`, which knows the topics, the
keys and what to do when the producer refuses a dead letter as too large.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from streams import topics
from streams.events import DeadLetter, Invalid, L0Event
from streams.metrics import StreamMetrics
from streams.records import Record

__all__ = ["Outbox", "Publish", "dead_letter", "publish"]

log = logging.getLogger("memstrata.stream")


@dataclass
class Outbox:
    """What a batch asks to publish (sent by the caller before the batch is acked)."""

    l0: list[L0Event] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)


def dead_letter(bad: Invalid, rec: Record, *, max_bytes: int,
                metrics: StreamMetrics) -> DeadLetter:
    """The dead letter for a refused record, cut to ``max_bytes``; counted and logged."""
    metrics.dlq_events.labels(bad.reason).inc()
    log.info("dead letter %s[%d]@%d: %s", rec.topic, rec.partition, rec.offset, bad)
    return bad.dead_letter(topic=rec.topic, partition=rec.partition, offset=rec.offset,
                           key=rec.key, value=rec.value or b"", max_bytes=max_bytes)


#: Sends one record and returns once the broker has it.
Publish = Callable[[str, bytes, bytes | None], Awaitable[None]]


async def publish(out: Outbox, send: Publish,
                  too_large: tuple[type[BaseException], ...] = ()) -> None:
    """Send an outbox: dead letters keyed like the original, L0 notices by session.

    Dead letters are cut to the producer's request size already; should the
    producer still refuse one as too large (``too_large``), it is sent again
    without the original value (size and digest stay), never stopping the worker.
    """
    for dead in out.dead:
        key = None if dead.key_b64 is None else base64.b64decode(dead.key_b64)
        try:
            await send(topics.DLQ, dead.to_bytes(), key)
        except too_large as exc:
            log.warning("dead letter %s[%d]@%d refused as too large (%s): sent without "
                        "its value", dead.topic, dead.partition, dead.offset, exc)
            bare = dead.model_copy(update={"value_b64": "", "key_b64": None,
                                           "truncated": True})
            await send(topics.DLQ, bare.to_bytes(), None)
    for note in out.l0:
        key = f"{note.tenant_id}/{note.user_id}/{note.session_id}".encode()
        await send(topics.L0, note.to_bytes(), key)
