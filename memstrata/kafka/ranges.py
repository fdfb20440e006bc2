"""Reading offset ranges of topic partitions again, with a consumer that has no group.

The stream worker reads turns again after a delete (``streams.replay``) and a
recycle carries the dead-letter records over (``streams.broker``); the query
service counts the units a close wrote from the L0 topic
(``query_service.controls``). All three read ranges with this one loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

__all__ = ["fetch_ranges"]


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
