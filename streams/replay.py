"""Reading a stretch of the turns topic again, for a delete's replay.

A delete read after turns that were produced after it must not remove them:
the processor asks for those offsets again (:data:`streams.records.Replay`)
and writes them back (:func:`read_range`), with the loop the other range
readers share (:func:`memstrata.kafka.ranges.fetch_ranges`); no group means no
offset of the worker's moves.
"""

from __future__ import annotations

from memstrata.kafka import KafkaSettings, clients
from memstrata.kafka.ranges import fetch_ranges
from streams.records import Record

__all__ = ["read_range"]


async def read_range(brokers: str, topic: str, ranges: dict[int, tuple[int, int]],
                     kafka: KafkaSettings) -> list[Record]:
    """Records of ``topic`` with ``start <= offset < stop`` per partition, in offset order."""
    from aiokafka import TopicPartition

    consumer = clients.consumer(kafka, brokers=brokers)
    await consumer.start()
    try:
        got, _ = await fetch_ranges(
            consumer, {TopicPartition(topic, p): r for p, r in ranges.items()})
        return [Record(m.topic, m.partition, m.offset, m.key, m.value)
                for tp in sorted(got, key=lambda tp: tp.partition) for m in got[tp]]
    finally:
        await consumer.stop()
