"""Where Ingest sends turn events, and what its acknowledgement promises.

* Embedded (``memstrata serve`` with its in-process broker and stream worker):
  :class:`StoredPublisher` publishes to the turns topic, then waits until the
  worker in this process has written and flushed those very records (their
  offsets in :class:`streams.processor.TurnProgress`). The embedded broker keeps
  topics in memory only, so an answer at the broker would promise nothing after
  a crash; this one promises ``STORED``. A wait past the call's deadline or
  ``MEMSTRATA_SERVICE_INGEST_WAIT_S`` fails the call (UNAVAILABLE) and claims nothing.
* Kafka (``MEMSTRATA_KAFKA_BROKERS`` set): :class:`KafkaPublisher` answers once the
  broker has acknowledged every record at ``acks=all``: ``BROKER``, as durable as
  the topic's replication.
* No broker: the service writes through the memory's writer role itself (``STORED``).

Records go to the turns topic (``MEMSTRATA_KAFKA_TOPIC_TURNS``, default
``memstrata.turns.v1``), one per message, keyed
``tenant/user/session`` so a session stays in order on one partition. The
record schema is :class:`memstrata.wire.TurnEvent`, the class the stream worker
decodes with; this module holds the producer side only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

from memstrata.kafka import clients
from memstrata.kafka.offsets import wait_committed
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import KafkaSettings
from memstrata.wire import TURNS_TOPIC, TurnEvent

__all__ = ["TURNS_TOPIC", "Durability", "KafkaSettings", "KafkaPublisher",
           "NotStored", "Refused", "StoreFailed", "StoredOffsets", "StoredPublisher", "TurnEvent",
           "TurnPublisher", "now_utc"]

#: What an acknowledged publish promises (the reply's ``durability``).
Durability = Literal["stored", "broker"]


class NotStored(TimeoutError):
    """The records were published but not stored in time: the call claims nothing."""


class TurnPublisher(Protocol):
    route: str
    durability: Durability

    async def start(self) -> None: ...

    async def publish(self, records: Sequence[TurnEvent],
                      timeout_s: float | None = None) -> None: ...

    async def wait_stored(self, timeout_s: float) -> bool:
        """Until the stream worker has stored every turn published so far; False on timeout."""
        ...

    async def stop(self) -> None: ...


class KafkaPublisher:
    """aiokafka producer: ``publish`` returns once the broker holds every record.

    Brokers, topic, the stream workers' group and TLS/SASL all come from the one
    :class:`~memstrata.kafka.KafkaSettings` the stream worker reads too, so both
    sides name the same topic; ``brokers`` overrides the setting (the embedded
    broker's address is known only once it runs).
    """

    route = "kafka"
    durability: Durability = "broker"

    def __init__(self, kafka: KafkaSettings, brokers: str | None = None) -> None:
        address = brokers or kafka.brokers
        if not address:
            raise ValueError("no broker: set MEMSTRATA_KAFKA_BROKERS")
        self.kafka = kafka
        self.brokers = address
        self.topic = kafka.topic_turns
        self.stream_group = kafka.group
        self._producer: Any = None

    async def start(self) -> None:
        self._producer = clients.producer(self.kafka, brokers=self.brokers, acks="all")
        await start_checked(self._producer, self.brokers, self.kafka)

    async def publish(self, records: Sequence[TurnEvent],
                      timeout_s: float | None = None) -> None:
        await self._send(records)

    async def _send(self, records: Sequence[TurnEvent]) -> list[Any]:
        """Send every record; their metadata (partition, offset) once the broker has them."""
        if self._producer is None:
            raise RuntimeError("the Kafka producer is not started")
        futures = [await self._producer.send(self.topic, r.to_bytes(), key=r.key)
                   for r in records]
        return [await f for f in futures]

    async def wait_stored(self, timeout_s: float, poll_s: float = 0.2) -> bool:
        """Wait until the stream worker has stored every turn on the topic now.

        A delete applied directly to the stores must not be overtaken by turns that
        were published before it and are still in the topic (they would bring the
        deleted data back). The worker commits offsets only after the stores hold a
        batch, so its committed offsets reaching today's end offsets means exactly
        that. False when ``timeout_s`` passes first.
        """
        return await wait_committed(self.brokers, self.stream_group, [self.topic], timeout_s,
                                    poll_s=poll_s, kafka=self.kafka)

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


class StoredOffsets(Protocol):
    """What the stream worker in this process has stored (:class:`streams.runtime.StoredTurns`)."""

    def reached(self, partition: int, offset: int) -> bool: ...

    def refused(self, partition: int, offset: int) -> str | None: ...


class Refused(ValueError):
    """The stream worker refused an event as invalid (it went to the DLQ): not stored.

    ``index`` is the event's position in the published records; the message starts
    with ``events[index]``, which the service renames to the request's field.
    """

    def __init__(self, index: int, message: str, refused: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.index = index
        #: Positions of every refused record (none of them stored).
        self.refused = list(refused) or [index]


class StoreFailed(RuntimeError):
    """The stream worker could not write events (a full disk, a store down): not stored.

    The worker's reason (paths, SQL) is in its log only; the caller gets UNAVAILABLE
    and a retry hint. ``stored`` is how many of the published events were stored anyway
    (in other sessions, stored by another write of the worker).
    """

    def __init__(self, failed: int, total: int, refused: Sequence[int] = ()) -> None:
        self.failed, self.stored = failed, total - failed
        #: Positions of every record not stored (refused by the worker, for any reason).
        self.refused = list(refused)
        kept = (f"; {self.stored} other event(s) of this call were stored, and a retry "
                f"with the same message ids counts them as duplicates"
                if self.stored else "; nothing of this call was stored")
        super().__init__(f"the stores could not write {failed} of {total} event(s) (the data "
                         f"volume is full or a store is unavailable){kept}: retry later")


#: DLQ reasons of events the worker could not write (not a fault of the event itself).
STORE_REASONS = frozenset({"store_failed"})


class StoredPublisher(KafkaPublisher):
    """Publish, then answer once the stream worker in this process has stored the records.

    For the embedded broker, which holds topics in memory only. The worker's
    offsets are noted only after the stores have a batch written and flushed, so
    ``progress.reached`` for every record's offset means the records survive a
    crash of this process, unless the worker refused one (``progress.refused``:
    sent to the DLQ), which fails the call. Polled (a dict lookup) rather than
    signalled: a few milliseconds are nothing next to a batch.
    """

    durability: Durability = "stored"

    def __init__(self, kafka: KafkaSettings, progress: StoredOffsets, *,
                 brokers: str | None = None, wait_s: float = 30.0,
                 poll_s: float = 0.01) -> None:
        super().__init__(kafka, brokers)
        self.progress = progress
        self.wait_s = wait_s
        self.poll_s = poll_s

    async def publish(self, records: Sequence[TurnEvent],
                      timeout_s: float | None = None) -> None:
        await self.confirm(records, await self.send(records), timeout_s)

    async def send(self, records: Sequence[TurnEvent]) -> list[Any]:
        """Publish only (the broker holds them); :meth:`confirm` waits for the worker."""
        return await self._send(records)

    async def confirm(self, records: Sequence[TurnEvent], metas: Sequence[Any],
                      timeout_s: float | None = None) -> None:
        """Until the worker has stored the records ``send`` published (their ``metas``).

        The service calls it outside its user locks, so calls for one user wait for
        the worker side by side and share its batching window.
        """
        loop = asyncio.get_running_loop()
        limit = self.wait_s if timeout_s is None else min(self.wait_s, timeout_s)
        deadline = loop.time() + limit
        need: dict[int, int] = {}
        for meta in metas:
            need[meta.partition] = max(need.get(meta.partition, 0), meta.offset + 1)
        while not all(self.progress.reached(p, o) for p, o in need.items()):
            if loop.time() >= deadline:
                raise NotStored(
                    f"{len(records)} events reached the broker but the stream worker has not "
                    f"stored them within {limit:g} s (MEMSTRATA_SERVICE_INGEST_WAIT_S or the "
                    f"call's deadline); nothing is acknowledged: retry with the same "
                    f"message_id values (duplicates are ignored)")
            await asyncio.sleep(self.poll_s)
        refused = [(i, why) for i, meta in enumerate(metas)
                   if (why := self.progress.refused(meta.partition, meta.offset)) is not None]
        failed = [i for i, why in refused if why.split(":", 1)[0] in STORE_REASONS]
        if failed:
            raise StoreFailed(len(failed), len(records), [i for i, _ in refused])
        if refused:
            i, why = refused[0]
            raise Refused(i, f"events[{i}]: refused by the stream worker ({why}); "
                          f"{len(refused)} of {len(records)} events refused, the others are "
                          f"stored", [j for j, _ in refused])


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
