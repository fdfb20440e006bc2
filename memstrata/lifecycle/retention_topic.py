"""Retention in Kafka mode: the sweep's deletes as control events for the stream workers.

In Kafka mode the stream workers own the stores' writes, so a sweep does not
delete itself: it publishes ``delete_session`` (or ``delete_user``) events to
``memstrata.control.v1``, each following every turn in the turns topic when its
batch began (``after``: the partitions' end offsets), so a delete never
overtakes the turns of the session it deletes. The worker that owns the
session's partition applies it with ``Memory.delete`` (every store, index and
cached layer). At each flush the sweep waits, up to ``apply_wait_s``, for the
stream group to commit past the events it published; the receipt says whether
they were applied by then (they are applied later otherwise: they are in the
topic).

The deleter runs on the sweep's thread with an event loop of its own (the
sweep is synchronous; aiokafka clients belong to the loop that started them).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from memstrata.kafka import clients
from memstrata.kafka.ends import log_end_offsets
from memstrata.kafka.offsets import wait_committed_to
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import KafkaSettings
from memstrata.model import Scope
from memstrata.wire import CONTROL_TOPIC, ControlEvent

__all__ = ["ControlTopicDeleter"]

log = logging.getLogger("memstrata.retention")


class ControlTopicDeleter:
    """A :class:`~memstrata.lifecycle.retention_sweep.Deleter` that publishes control events.

    ``brokers`` overrides ``kafka.brokers`` (the embedded broker's address);
    ``group`` is the stream workers' consumer group whose commits say an event was
    applied (``kafka.group`` by default); ``apply_wait_s`` 0 publishes without waiting.
    """

    mode = "control-topic"

    def __init__(self, kafka: KafkaSettings, *, brokers: str | None = None,
                 group: str | None = None, apply_wait_s: float = 120.0) -> None:
        self.kafka = kafka
        self.brokers = brokers or kafka.brokers or ""
        self.group = group or kafka.group
        self.apply_wait_s = apply_wait_s
        self._runner: asyncio.Runner | None = None
        self._producer: Any = None
        self._consumer: Any = None
        self._admin: Any = None
        #: The turns topic's end offsets when the current batch began.
        self._after: dict[int, int] | None = None
        #: Per control partition, the last offset published since the last flush.
        self._sent: dict[int, int] = {}
        #: Every event this deleter published: (partition, offset, event).
        self.published: list[tuple[int, int, ControlEvent]] = []

    def __enter__(self) -> "ControlTopicDeleter":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self._runner = asyncio.Runner()
        try:
            self._runner.run(self._start())
        except BaseException:
            self.close()
            raise

    async def _start(self) -> None:
        self._producer = clients.producer(self.kafka, brokers=self.brokers, acks="all")
        await start_checked(self._producer, self.brokers, self.kafka)
        self._consumer = clients.consumer(self.kafka, brokers=self.brokers)
        await self._consumer.start()
        self._admin = clients.admin(self.kafka, brokers=self.brokers)
        await self._admin.start()

    def close(self) -> None:
        if self._runner is None:
            return
        try:
            self._runner.run(self._stop())
        finally:
            self._runner.close()
            self._runner = None

    async def _stop(self) -> None:
        for client, how in ((self._producer, "stop"), (self._consumer, "stop"),
                            (self._admin, "close")):
            if client is not None:
                try:
                    await getattr(client, how)()
                except Exception:  # noqa: BLE001 - stopping anyway
                    pass
        self._producer = self._consumer = self._admin = None

    def _run(self, coro: Any) -> Any:
        if self._runner is None:
            raise RuntimeError("ControlTopicDeleter is not started")
        return self._runner.run(coro)

    def delete(self, scope: Scope, session_id: str | None) -> dict[str, int]:
        self._run(self._publish(scope, session_id))
        return {"events": 1}

    async def _turn_ends(self) -> dict[int, int]:
        from aiokafka import TopicPartition

        topic = self.kafka.topic_turns
        parts = self._consumer.partitions_for_topic(topic)
        if not parts:
            await self._consumer.topics()  # refresh the metadata
            parts = self._consumer.partitions_for_topic(topic) or set()
        ends = await log_end_offsets(self._consumer, [TopicPartition(topic, p) for p in parts])
        return {tp.partition: off for tp, off in ends.items()}

    async def _publish(self, scope: Scope, session_id: str | None) -> None:
        if self._after is None:
            self._after = await self._turn_ends()
        ev = ControlEvent(type="delete_user" if session_id is None else "delete_session",
                          tenant_id=scope.tenant_id, user_id=scope.user_id,
                          session_id=session_id, ts=datetime.now(UTC), after=self._after)
        meta = await self._producer.send_and_wait(CONTROL_TOPIC, ev.to_bytes(), key=ev.key)
        partition, offset = int(meta.partition), int(meta.offset)
        self._sent[partition] = max(self._sent.get(partition, -1), offset)
        self.published.append((partition, offset, ev))

    def flush(self) -> dict[str, Any]:
        """Wait (up to ``apply_wait_s``) for the stream group to apply what was published."""
        sent, self._sent, self._after = self._sent, {}, None
        if not sent:
            return {}
        applied = self.apply_wait_s > 0 and bool(self._run(self._applied(sent)))
        if not applied and self.apply_wait_s > 0:
            log.warning("retention: the stream group %r has not applied the delete events "
                        "within %.0f s (MEMSTRATA_RETENTION_APPLY_WAIT_S); they stay in %s "
                        "and are applied when it catches up", self.group, self.apply_wait_s,
                        CONTROL_TOPIC)
        return {"events": {str(p): o for p, o in sorted(sent.items())}, "applied": applied}

    async def _applied(self, sent: dict[int, int]) -> bool:
        from aiokafka import TopicPartition

        targets = {TopicPartition(CONTROL_TOPIC, p): o + 1 for p, o in sent.items()}
        return await wait_committed_to(self._admin, self.group, targets, self.apply_wait_s,
                                       poll_s=0.2)
