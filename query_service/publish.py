"""Where Ingest sends turn events, and what its acknowledgement promises.

* Embedded (``memstrata serve`` with its in-process broker and stream worker):
  :class:`StoredPublisher` publishes to the turns topic, then waits until the
  worker in this process has written and flushed those very records (their
  offsets in :class:`streams.progress.TurnProgress`). The embedded broker keeps
  topics in memory only, so an answer at the broker would promise nothing after
  a crash; this one promises ``STORED``. A wait past the call's deadline or
  ``MEMSTRATA_SERVICE_INGEST_WAIT_S`` fails the call (UNAVAILABLE) and claims nothing.
* Kafka (``MEMSTRATA_KAFKA_BROKERS`` set): :class:`KafkaPublisher` answers once the
  broker has acknowledged every record at ``acks=all``: ``BROKER``, as durable as
  the topic's replication.
* No broker: the service writes through the memory's writer role itself (``STORED``).

Records go to the turns topic (``MEMSTRATA_KAFKA_TOPIC_TURNS``, default
``memstrata.turns.v1``), one per message, keyed
``tenant/user/`` so every event of a user, deletes included, is ordered on one
partition (ADR 0005), each user's share of a call appended as one record batch. The
record schema is :class:`memstrata.wire.TurnEvent`, the class the stream worker
decodes with; this module holds the producer side only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple, Protocol

from memstrata.kafka import clients
from memstrata.kafka.offsets import wait_committed
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import KafkaSettings
from memstrata.wire import TURNS_TOPIC, TurnEvent

__all__ = ["TURNS_TOPIC", "Durability", "Intake", "IntakePaused", "KafkaSettings",
           "KafkaPublisher", "NotStored", "Placed",
           "Refused", "ShareTooLarge", "StoreFailed", "StoredOffsets", "StoredPublisher",
           "TurnEvent", "TurnPublisher", "now_utc", "send_per_user"]

#: Largest record batch a user's share of one call may take (Kafka's default
#: ``max.message.bytes`` is about 1 MiB; a share is appended whole, never split).
MAX_USER_BATCH_BYTES = 1_000_000

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
        self._producer = clients.producer(self.kafka, brokers=self.brokers, acks="all",
                                          max_batch_size=MAX_USER_BATCH_BYTES)
        await start_checked(self._producer, self.brokers, self.kafka)

    async def publish(self, records: Sequence[TurnEvent],
                      timeout_s: float | None = None) -> None:
        await self._send(records)

    async def _send(self, records: Sequence[TurnEvent]) -> list[Any]:
        """Send every record; their metadata (partition, offset) once the broker has them.

        Each user's records go as one record batch (ADR 0005): the broker appends
        it whole, so a delete's ``after`` (the end offsets it reads) falls before
        or after all of them, never inside, whichever replica sends the delete.
        """
        if self._producer is None:
            raise RuntimeError("the Kafka producer is not started")
        return await send_per_user(self._producer, self.topic, records)

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


class Intake(Protocol):
    """The door a recycle of the embedded broker closes (``streams.recycle.IntakeHold``)."""

    async def enter(self, timeout_s: float, for_s: float) -> int | None: ...

    def leave(self, token: int | None) -> None: ...

    def retry_after_s(self) -> float: ...


class IntakePaused(TimeoutError):
    """The embedded broker is being recycled and stayed held past the wait: nothing sent."""

    def __init__(self, waited_s: float, retry_after_s: float) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the embedded broker is being recycled (emptied once drained) and intake stayed "
            f"held for {waited_s:g} s; nothing of this call was sent: retry in "
            f"{retry_after_s:.0f} s with the same message_id values")


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
        #: Closed while the embedded broker is recycled (the worker's, when it offers one).
        self.intake: Intake | None = getattr(progress, "intake", None)
        #: Each sent call's intake token until its confirm ends (by id of its metadata).
        self._tokens: dict[int, int | None] = {}

    async def publish(self, records: Sequence[TurnEvent],
                      timeout_s: float | None = None) -> None:
        await self.confirm(records, await self.send(records), timeout_s)

    async def wait_stored(self, timeout_s: float, poll_s: float = 0.2) -> bool:
        """As :meth:`KafkaPublisher.wait_stored`, never across a recycle of the broker.

        The end offsets it waits for would not exist on a fresh broker (it numbers from
        0 again): so it waits while a recycle runs (after one, everything published
        before is stored) and holds off the next one until it is done.
        """
        if self.intake is None:
            return await super().wait_stored(timeout_s, poll_s)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        token = await self.intake.enter(timeout_s, for_s=timeout_s + 5)
        if token is None:
            return False
        try:
            return await super().wait_stored(max(0.0, deadline - loop.time()), poll_s)
        finally:
            self.intake.leave(token)

    async def send(self, records: Sequence[TurnEvent]) -> list[Any]:
        """Publish only (the broker holds them); :meth:`confirm` waits for the worker.

        While the embedded broker is recycled this waits (at most ``wait_s``) and then
        raises :class:`IntakePaused`; a call let through counts as in flight until its
        :meth:`confirm` ends, so a recycle never starts under it.
        """
        token: int | None = None
        if self.intake is not None:
            # The confirm that follows waits at most wait_s too: past that, the token lapses.
            token = await self.intake.enter(self.wait_s, for_s=2 * self.wait_s + 5)
            if token is None:
                raise IntakePaused(self.wait_s, self.intake.retry_after_s())
        try:
            metas = await self._send(records)
        except BaseException:
            if self.intake is not None:
                self.intake.leave(token)
            raise
        if self.intake is not None:
            self._tokens[id(metas)] = token
        return metas

    async def confirm(self, records: Sequence[TurnEvent], metas: Sequence[Any],
                      timeout_s: float | None = None) -> None:
        """Until the worker has stored the records ``send`` published (their ``metas``).

        The service calls it outside its user locks, so calls for one user wait for
        the worker side by side and share its batching window.
        """
        try:
            await self._confirm(records, metas, timeout_s)
        finally:
            if self.intake is not None:
                self.intake.leave(self._tokens.pop(id(metas), None))

    async def _confirm(self, records: Sequence[TurnEvent], metas: Sequence[Any],
                       timeout_s: float | None) -> None:
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


class Placed(NamedTuple):
    """Where the broker put one record of a user's batch."""

    partition: int
    offset: int


class ShareTooLarge(ValueError):
    """A user's events of one call do not fit one record batch (refused, nothing sent)."""


async def send_per_user(producer: Any, topic: str,
                        records: Sequence[TurnEvent]) -> list[Placed]:
    """Append each user's records as one record batch on the user's partition.

    Every batch is built before any is sent, so a share too large for one batch
    (``max_batch_size``) refuses the whole call rather than splitting it: a split
    share could straddle a delete sent by another replica.
    """
    from aiokafka.partitioner import DefaultPartitioner

    parts = sorted(await producer.partitions_for(topic))
    place = DefaultPartitioner()  # murmur2, as every Kafka client places keyed records
    shares: dict[bytes, list[int]] = {}
    for i, r in enumerate(records):
        shares.setdefault(r.key, []).append(i)
    built: list[tuple[bytes, list[int], Any]] = []
    for key, idx in shares.items():
        batch = producer.create_batch()
        for n, i in enumerate(idx):
            if batch.append(key=key, value=records[i].to_bytes(), timestamp=None) is None:
                raise ShareTooLarge(
                    f"events: user {records[i].user_id!r} has {len(idx)} events in this call "
                    f"and only {n} fit one record batch (limit {MAX_USER_BATCH_BYTES} bytes); "
                    f"a user's events of one call are appended whole, so send fewer per call")
        batch.close()
        built.append((key, idx, batch))
    sent = [(idx, await producer.send_batch(batch, topic, partition=int(place(key, parts, parts))))
            for key, idx, batch in built]
    out: list[Placed | None] = [None] * len(records)
    for idx, fut in sent:
        meta = await fut
        for n, i in enumerate(idx):
            out[i] = Placed(int(meta.partition), int(meta.offset) + n)
    return [m for m in out if m is not None]


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
