"""Reading a stretch of the turns topic again, for a delete's replay.

A delete read after turns that were produced after it must not remove them:
the processor asks for those offsets again (:data:`streams.records.Replay`)
and writes them back. This is the broker side of that request, a plain
consumer with no group, so it moves no offset of the worker's.
"""

from __future__ import annotations

from memstrata.kafka import clients
from streams.records import Record
from memstrata.kafka import KafkaSettings

__all__ = ["read_range"]


async def read_range(brokers: str, topic: str, ranges: dict[int, tuple[int, int]],
                     kafka: KafkaSettings) -> list[Record]:
    """Records of ``topic`` with ``start <= offset < stop`` per partition, in offset order."""
    from aiokafka import TopicPartition

    consumer = clients.consumer(kafka, brokers=brokers)
    await consumer.start()
    try:
        tps = {TopicPartition(topic, p): (a, b) for p, (a, b) in ranges.items() if b > a}
        consumer.assign(list(tps))
        for tp, (start, _) in tps.items():
            consumer.seek(tp, start)
        out: list[Record] = []
        todo = dict(tps)
        while todo:
            batch = await consumer.getmany(*todo, timeout_ms=1000)
            for tp, msgs in batch.items():
                stop = tps[tp][1]
                out += [Record(m.topic, m.partition, m.offset, m.key, m.value)
                        for m in msgs if m.offset < stop]
                if msgs and msgs[-1].offset >= stop - 1:
                    todo.pop(tp, None)
            for tp in list(todo):
                if await consumer.position(tp) >= tps[tp][1]:
                    todo.pop(tp)
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        await consumer.stop()
