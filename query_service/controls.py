"""Closes and deletes in Kafka mode: sent through ``memstrata.control.v1``, answered once applied.

With Ingest publishing to Kafka (``KafkaPublisher``, durability ``BROKER``) the
stream workers own the stores' writes, so ``CloseSession``, ``DeleteSession``
and ``DeleteUser`` are control events like ``memstrata produce``'s: the worker
applies each after the turns it follows (``after``: the turns topic's end
offsets when it is sent) and treats a turn produced later as new data, so a
delete neither overtakes the turns it deletes nor loses the ones after it.

The call is answered once the event is applied: the stream group has committed
its offset on the control topic (the worker acknowledges a control only after
the stores have it, flushed) and a read of the stores shows the data gone.
The turns removed are counted from the doc store before the event is sent (the
index stores' counts stay with the worker); what a close wrote comes from the
worker's own notice on ``memstrata.l0.v1``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from memstrata.kafka import clients
from memstrata.kafka.ends import log_end_offsets
from memstrata.kafka.offsets import wait_committed_to
from memstrata.kafka.ranges import fetch_ranges
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import KafkaSettings
from memstrata.model import Scope
from memstrata.roles import DeleteReceipt, MemoryReader
from memstrata.wire import CONTROL_TOPIC, L0_TOPIC, TURNS_TOPIC, ControlEvent, event_key
from query_service.writes import DeleteIncomplete

__all__ = ["Held", "NotApplied", "TopicControls", "held"]

T = TypeVar("T")
#: Runs a store read off the event loop (the service's read pool).
ReadFn = Callable[[Callable[[], T]], Awaitable[T]]


class NotApplied(DeleteIncomplete):
    """The control event is in the topic but no worker confirmed it in time (it still will)."""


@dataclass
class Held:
    """What the stores hold for a user or a session: message ids per session, turn count."""

    ids: dict[str, set[str]] = field(default_factory=dict)
    turns: int = 0

    def __bool__(self) -> bool:
        return bool(self.ids)

    def left_of(self, before: "Held") -> dict[str, int]:
        """Of the messages in ``before``, how many per session are still here."""
        left = {sid: len(ids & before.ids.get(sid, set())) for sid, ids in self.ids.items()}
        return {sid: n for sid, n in left.items() if n}


def held(memory: MemoryReader, scope: Scope, session_id: str | None) -> Held:
    """Read what the stores hold for ``scope`` (one session, or every session of the user)."""
    if session_id is None:
        sids = [m.session_id for m in memory.sessions(scope)]
    else:
        try:
            memory.session(scope, session_id)
        except LookupError:  # SessionNotFound
            return Held()
        sids = [session_id]
    out = Held()
    for sid in sids:
        try:
            turns = memory.raw(scope, sid)
        except LookupError:  # deleted meanwhile
            continue
        out.ids[sid] = {i for t in turns for i in t.source_ids}
        out.turns += len(turns)
    return out


class TopicControls:
    """Sends control events and waits until the stream group has applied them.

    One producer (``acks=all``), one admin client (the group's committed
    offsets) and one consumer (end offsets, the L0 notices) for the service's
    lifetime.
    """

    def __init__(self, brokers: str, stream_group: str, *, kafka: KafkaSettings,
                 turns_topic: str = TURNS_TOPIC, poll_s: float = 0.05,
                 fetch_timeout_s: float = 10.0) -> None:
        #: TLS/SASL for the three clients (the one Kafka settings class).
        self.kafka = kafka
        self.brokers = brokers
        self.fetch_timeout_s = fetch_timeout_s
        self.stream_group = stream_group
        self.turns_topic = turns_topic
        self.poll_s = poll_s
        self._producer: Any = None
        self._admin: Any = None
        self._consumer: Any = None
        #: The consumer reads the L0 notices of one close at a time.
        self._reading = asyncio.Lock()

    async def start(self) -> None:
        self._producer = clients.producer(self.kafka, brokers=self.brokers, acks="all")
        await start_checked(self._producer, self.brokers, self.kafka)
        self._admin = clients.admin(self.kafka, brokers=self.brokers)
        await self._admin.start()
        self._consumer = clients.consumer(self.kafka, brokers=self.brokers)
        await self._consumer.start()

    async def stop(self) -> None:
        for client, close in ((self._producer, "stop"), (self._consumer, "stop"),
                              (self._admin, "close")):
            if client is not None:
                try:
                    await getattr(client, close)()
                except Exception:  # noqa: BLE001 - stopping anyway
                    pass
        self._producer = self._admin = self._consumer = None

    async def _ends(self, topic: str) -> dict[int, int]:
        from aiokafka import TopicPartition

        parts = self._consumer.partitions_for_topic(topic)
        if not parts:
            await self._consumer.topics()  # refresh the metadata
            parts = self._consumer.partitions_for_topic(topic) or set()
        ends = await self._consumer.end_offsets([TopicPartition(topic, p) for p in parts])
        return {tp.partition: int(off) for tp, off in ends.items()}

    async def _fetched_ends(self, topic: str) -> dict[int, int]:
        """End offsets as a fetch reports them (``memstrata.kafka.ends``: the embedded
        broker's ListOffsets undercounts a partition whose last batch held several records)."""
        from aiokafka import TopicPartition

        listed = await self._ends(topic)
        async with self._reading:
            try:
                ends = await log_end_offsets(
                    self._consumer, [TopicPartition(topic, p) for p in listed],
                    self.fetch_timeout_s)
            except TimeoutError as exc:
                raise DeleteIncomplete(f"cannot read the end offsets of {topic}: {exc}; "
                                       f"nothing was sent, retry") from None
        return {tp.partition: off for tp, off in ends.items()}

    async def send(self, type_: Literal["close_session", "delete_session", "delete_user"],
                   scope: Scope, session_id: str | None) -> tuple[int, int]:
        """Send the event after every turn now in the topic; its (partition, offset)."""
        after = await self._fetched_ends(self.turns_topic)
        ev = ControlEvent(type=type_, tenant_id=scope.tenant_id, user_id=scope.user_id,
                          session_id=session_id, ts=datetime.now(UTC), after=after)
        meta = await (await self._producer.send(CONTROL_TOPIC, ev.to_bytes(), key=ev.key))
        return int(meta.partition), int(meta.offset)

    async def wait_applied(self, partition: int, offset: int, timeout_s: float) -> None:
        """Until the stream group has committed past ``offset`` on the control topic."""
        from aiokafka import TopicPartition

        tp = TopicPartition(CONTROL_TOPIC, partition)
        if not await wait_committed_to(self._admin, self.stream_group, {tp: offset + 1},
                                       timeout_s, poll_s=self.poll_s):
            raise NotApplied(
                f"the {CONTROL_TOPIC} event (partition {partition}, offset {offset}) was "
                f"not applied by stream group {self.stream_group!r} within {timeout_s:g} s "
                f"(MEMSTRATA_SERVICE_DELETE_WAIT_S); it stays queued and will be applied: "
                f"retry the call to confirm")

    async def close_notices(self, scope: Scope, session_id: str,
                            since: dict[int, int]) -> int:
        """Units written by closes of the session noted on the L0 topic from ``since`` on."""
        from aiokafka import TopicPartition

        ends = await self._fetched_ends(L0_TOPIC)
        key = event_key(scope.tenant_id, scope.user_id, session_id)
        todo = {TopicPartition(L0_TOPIC, p): (since.get(p, 0), end) for p, end in ends.items()
                if end > since.get(p, 0)}
        if not todo:
            return 0
        async with self._reading:
            return await self._count_closes(todo, key)

    async def _count_closes(self, todo: dict[Any, tuple[int, int]], key: bytes) -> int:
        reader = self._consumer
        got, _ = await fetch_ranges(reader, todo)
        units = 0
        for msgs in got.values():
            for m in msgs:
                if m.key == key:
                    note = json.loads(m.value)
                    if note.get("cause") == "close":
                        units += len(note.get("unit_ids", []))
        try:
            reader.unsubscribe()  # no fetching in the background until the next close
        except Exception:  # noqa: BLE001
            pass
        return units

    async def close(self, scope: Scope, session_id: str, timeout_s: float) -> int:
        """Close the session through the topic; the units the worker wrote for it."""
        since = await self._fetched_ends(L0_TOPIC)
        partition, offset = await self.send("close_session", scope, session_id)
        await self.wait_applied(partition, offset, timeout_s)
        return await self.close_notices(scope, session_id, since)

    async def delete(self, memory: MemoryReader, scope: Scope, session_id: str | None,
                     before: Held, read: ReadFn[Any], timeout_s: float) -> DeleteReceipt:
        """Delete through the topic; the receipt counts the turns the doc store held before.

        The index stores' own counts are the worker's to know (its receipt stays in
        its process), so only ``docs`` is reported: the turns read before the event
        was sent, every one of them checked gone afterwards.

        Raises :class:`NotApplied` when no worker confirmed in time, and
        :class:`~query_service.writes.DeleteIncomplete` when the worker confirmed
        but the data is still there (it refused the event: see ``memstrata.dlq.v1``).
        """
        partition, offset = await self.send(
            "delete_user" if session_id is None else "delete_session", scope, session_id)
        await self.wait_applied(partition, offset, timeout_s)
        now = await read(lambda: held(memory, scope, session_id))
        left = now.left_of(before)
        if left:
            raise DeleteIncomplete(f"the stream worker applied the delete (partition {partition}, offset "
                          f"{offset}) but the stores still hold {sum(left.values())} of its "
                          f"messages (sessions {sorted(left)}); it may have refused it (see "
                          f"memstrata.dlq.v1): retry")
        return DeleteReceipt(scope=scope, session_id=session_id,
                             removed={"docs": before.turns})
