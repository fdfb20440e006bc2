"""Where Ingest sends turn events: the turns topic, or straight into the local memory.

With ``MEMSTRATA_KAFKA_BROKERS`` set, events go to ``memstrata.turns.v1`` (one
record per message, keyed ``tenant/user/session`` so a session stays in
order on one partition) and Ingest answers once the broker has acknowledged
them (``acks=all``). Without a broker (embedded, one process) they are written
through the memory's writer role directly.

The record schema is :class:`memstrata.wire.TurnEvent`, the same class the
stream worker decodes with; this module holds the producer side only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.kafka_security import kafka_client_kwargs, start_checked
from memstrata.wire import TURNS_TOPIC, TurnEvent

__all__ = ["TURNS_TOPIC", "KafkaProducerSettings", "KafkaPublisher", "TurnEvent",
           "TurnPublisher", "now_utc"]


class KafkaProducerSettings(BaseSettings):
    """The broker list (shared with the stream worker's ``MEMSTRATA_KAFKA_*`` settings)."""

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_KAFKA_", extra="ignore")

    brokers: str | None = None
    topic_turns: str = TURNS_TOPIC
    #: The stream worker's consumer group (its ``MEMSTRATA_STREAM_APP_ID``); deletes wait
    #: for it to have stored every turn published before them.
    stream_group: str = Field(default_factory=lambda: os.environ.get(
        "MEMSTRATA_STREAM_APP_ID", "memstrata-stream"))


class TurnPublisher(Protocol):
    route: str

    async def start(self) -> None: ...

    async def publish(self, records: Sequence[TurnEvent]) -> None: ...

    async def stop(self) -> None: ...


class KafkaPublisher:
    """aiokafka producer: ``publish`` returns once the broker holds every record."""

    route = "kafka"

    def __init__(self, brokers: str, topic: str = TURNS_TOPIC,
                 stream_group: str = "memstrata-stream") -> None:
        self.brokers = brokers
        self.topic = topic
        self.stream_group = stream_group
        self._producer: Any = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaProducer  # the kafka extra

        self._producer = AIOKafkaProducer(
            bootstrap_servers=self.brokers, **kafka_client_kwargs(), acks="all")
        await start_checked(self._producer, self.brokers)

    async def publish(self, records: Sequence[TurnEvent]) -> None:
        if self._producer is None:
            raise RuntimeError("the Kafka producer is not started")
        futures = [await self._producer.send(self.topic, r.to_bytes(), key=r.key)
                   for r in records]
        for f in futures:
            await f

    async def wait_stored(self, timeout_s: float, poll_s: float = 0.2) -> bool:
        """Wait until the stream worker has stored every turn on the topic now.

        A delete applied directly to the stores must not be overtaken by turns that
        were published before it and are still in the topic (they would bring the
        deleted data back). The worker commits offsets only after the stores hold a
        batch, so its committed offsets reaching today's end offsets means exactly
        that. False when ``timeout_s`` passes first.
        """
        from aiokafka import AIOKafkaConsumer, TopicPartition
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=self.brokers, **kafka_client_kwargs())
        consumer = AIOKafkaConsumer(bootstrap_servers=self.brokers, enable_auto_commit=False,
                                    **kafka_client_kwargs())
        await admin.start()
        await consumer.start()
        try:
            await consumer.topics()
            tps = [TopicPartition(self.topic, p)
                   for p in sorted(consumer.partitions_for_topic(self.topic) or ())]
            ends = await consumer.end_offsets(tps) if tps else {}
            deadline = asyncio.get_running_loop().time() + timeout_s
            while True:
                try:
                    done = await admin.list_consumer_group_offsets(self.stream_group,
                                                                   partitions=tps)
                except Exception:  # noqa: BLE001 - no such group yet: nothing committed
                    done = {}
                if all(ends[tp] == 0 or (done.get(tp) is not None
                                         and done[tp].offset >= ends[tp]) for tp in tps):
                    return True
                if asyncio.get_running_loop().time() >= deadline:
                    return False
                await asyncio.sleep(poll_s)
        finally:
            await consumer.stop()
            await admin.close()

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
