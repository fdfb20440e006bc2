"""Reading stretches of topics again, with a plain consumer that has no group.

A delete read after turns that were produced after it must not remove them:
the processor asks for those offsets again (:data:`streams.records.Replay`)
and writes them back (:func:`read_range`). A recycle of the embedded broker
carries the dead-letter records over (``streams.broker.read_records``). Both
read offset ranges with one loop (:func:`fetch_ranges`); no group means no
offset of the worker's moves.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from memstrata.kafka import KafkaSettings, clients
from streams.records import Record

__all__ = ["fetch_ranges", "read_range"]


async def fetch_ranges(consumer: Any, ranges: Mapping[Any, tuple[int, int]], *,
                       timeout_s: float | None = None) -> tuple[dict[Any, list[Any]], set[Any]]:
    """The records with ``start <= offset < stop`` of each ``TopicPartition`` in ``ranges``
    (in offset order), read by a started consumer that this call assigns; and the
    partitions not read to their stop within ``timeout_s`` (None: wait for all).

    A partition is done when a record at ``stop - 1`` or later arrives, or when the
    consumer's position has reached ``stop`` (the last records were skipped, as a
    compacted or transaction-marked log can do).
    """
    wanted = {tp: (a, b) for tp, (a, b) in ranges.items() if b > a}
    got: dict[Any, list[Any]] = {tp: [] for tp in wanted}
    if not wanted:
        return got, set()
    consumer.assign(list(wanted))
    for tp, (start, _) in wanted.items():
        consumer.seek(tp, start)
    todo = dict(wanted)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while todo and (deadline is None or time.monotonic() < deadline):
        batch = await consumer.getmany(*todo, timeout_ms=500)
        for tp, msgs in batch.items():
            stop = wanted[tp][1]
            got[tp] += [m for m in msgs if m.offset < stop]
            if msgs and msgs[-1].offset >= stop - 1:
                todo.pop(tp, None)
        for tp in list(todo):
            if await consumer.position(tp) >= wanted[tp][1]:
                todo.pop(tp)
    return got, set(todo)


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
