"""Reproduction 3 of issue 17: one Kafka setting for the service's producer and the worker.

Before, the service's ``KafkaProducerSettings`` shared the ``MEMSTRATA_KAFKA_``
prefix with the worker's ``KafkaSettings`` but was not registered, so
``MEMSTRATA_KAFKA_TOPIC_TURNS=x`` was refused as unknown at start-up; and had it
been accepted, the service would have published to ``x`` while the worker read
``memstrata.turns.v1``. Now one core class owns the namespace: the worker (a
real ``python -m streams worker``) and the service's producer (the
``KafkaPublisher`` that ``build_server`` makes from the loaded settings) both
use ``x``, and the turn is stored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstrata.config import load_config, load_settings
from memstrata.kafka import KafkaSettings
from memstrata.model import Scope
from memstrata.store.factory import open_doc_store
from memstrata.wire import TurnEvent
from query_service.publish import KafkaPublisher
from streams import topics
from streams.broker import EmbeddedBroker
from streams.events import utcnow
from streams.worker import group_lag, wait_drained
from tests.integration.streams.harness import WorkerProc, wait_until

pytestmark = pytest.mark.integration

KIM = Scope(tenant_id="t-topic", user_id="kim")


async def _topics(brokers: str) -> set[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=brokers)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


def test_a_turns_topic_setting_is_used_by_the_service_and_the_worker(
        broker: EmbeddedBroker, group: str, logs: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = f"memstrata.turns.{group}"
    monkeypatch.setenv("MEMSTRATA_KAFKA_TOPIC_TURNS", topic)
    monkeypatch.setenv("MEMSTRATA_KAFKA_BROKERS", broker.address)
    monkeypatch.setenv("MEMSTRATA_KAFKA_GROUP", group)
    config = load_config()  # refused before: "not a memstrata setting"
    kafka = config.get(KafkaSettings)
    assert (kafka.topic_turns, kafka.group) == (topic, group)
    default_before = asyncio.run(group_lag(broker.address, group, [topics.TURNS]))

    data = tmp_path / "worker"
    worker = WorkerProc(broker.address, data, group, logs).start()  # inherits the variables
    try:
        # The worker declares the configured topic before it consumes.
        wait_until(lambda: topic in asyncio.run(_topics(broker.address)), 90, step=0.2)

        async def ingest() -> None:
            publisher = KafkaPublisher(kafka)  # what build_server makes of these settings
            await publisher.start()
            try:
                await publisher.publish([TurnEvent(
                    tenant_id=KIM.tenant_id, user_id=KIM.user_id, session_id="s1",
                    message_id="s1#1", role="user", content="I keep bees on the roof.",
                    ts=utcnow())])
            finally:
                await publisher.stop()

        asyncio.run(ingest())
        assert asyncio.run(wait_drained(broker.address, group, 90, kafka=kafka)), \
            worker.log_text[-3000:]
        lag = asyncio.run(group_lag(broker.address, group, kafka=kafka))
        assert {t for t, _ in lag} == {topic, topics.CONTROL}  # what the worker reads
    finally:
        assert worker.stop() == 0, worker.log_text[-3000:]
    # Nothing went to the default topic; the turn is stored.
    assert asyncio.run(group_lag(broker.address, group, [topics.TURNS])) == default_before
    docs = open_doc_store(load_settings(data_dir=data), read_only=True)
    try:
        assert [m.content for t in docs.get_turns(KIM, "s1") for m in t.messages] == [
            "I keep bees on the roof."]
    finally:
        docs.close()
