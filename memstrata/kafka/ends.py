"""The end offsets of topic partitions, as a fetch reports them.

A delete must follow every turn already in the topic, and a drain must wait
for every record: both need the partitions' true end offsets. The embedded
tansu broker answers ListOffsets (``consumer.end_offsets``) with the first
offset of a partition's last record batch plus one, so a batch of several
records (any producer with ``linger_ms``, or the query service's batched
Ingest) looks shorter than it is. Its fetch responses carry the true high
watermark, so :func:`log_end_offsets` fetches once per partition and keeps
the larger of the two (on a broker without the flaw they agree).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

__all__ = ["log_end_offsets"]


async def log_end_offsets(consumer: Any, partitions: Sequence[Any],
                          timeout_s: float = 10.0) -> dict[Any, int]:
    """``{TopicPartition: end offset}`` for ``partitions``, read with a group-less aiokafka consumer.

    The consumer is assigned the partitions for the fetch and unassigned after
    (its earlier assignment, if any, is not restored). TimeoutError when a
    partition's fetch does not answer within ``timeout_s``.
    """
    tps = list(partitions)
    if not tps:
        return {}
    listed = await consumer.end_offsets(tps)
    # A partition listed at 0 holds no batch: its end is 0, and a fetch there
    # would wait for a record. Any other is read from the record before its listed
    # end, so the fetch always has something to return with the high watermark.
    tps = [tp for tp in tps if listed[tp] > 0]
    ends = {tp: 0 for tp in listed if listed[tp] <= 0}
    if not tps:
        return ends
    consumer.assign(tps)
    try:
        for tp in tps:
            consumer.seek(tp, listed[tp] - 1)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while any(consumer.highwater(tp) is None for tp in tps):
            if loop.time() > deadline:
                raise TimeoutError(f"no fetch answer for {tps} within {timeout_s:g} s")
            await consumer.getmany(*tps, timeout_ms=100, max_records=1)
        return ends | {tp: max(int(listed[tp]), int(consumer.highwater(tp))) for tp in tps}
    finally:
        consumer.unsubscribe()
        # Let the fetcher see the empty assignment before anything else runs: a
        # ``consumer.stop()`` right after ``unsubscribe()`` otherwise waits on a
        # fetch tansu holds open (seen: 40 s and more).
        await asyncio.sleep(0)
