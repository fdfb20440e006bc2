"""Batches cut on the worker's own clock, not after a fresh wait each time.

Faust's ``noack_take(max, within)`` starts waiting ``within`` only once the
previous batch has been handled. A worker that takes ``T`` seconds per batch
then cuts one every ``T + within``: at 80% of its capacity ``T`` settles near
``4 * within`` and an event waits up to two cycles (about ``9 * within``) to
be searchable. :func:`paced` cuts a batch once ``within`` has passed since the
previous cut (at once when handling took that long already), or when
``batch_max`` events are waiting, so the cycle is ``max(T, within)`` and an
event waits about ``within + T``. Size and efficiency under a backlog are the
same as before: a backlog fills ``batch_max`` at once.

Chunks are read from the source in a task of their own, so events keep
arriving while a batch is handled, until a full batch waits (a slow writer
still holds the consumer back, and a worker behind its topic still gets full
batches: what holds open windows, :mod:`streams.processor`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import TypeVar

__all__ = ["paced"]

T = TypeVar("T")


class _End:
    """The source is exhausted (``error`` None) or failed."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


async def paced(chunks: AsyncIterator[Sequence[T]], batch_max: int, within: float,
                clock: Callable[[], float] = time.monotonic) -> AsyncGenerator[list[T], None]:
    """Regroup ``chunks`` into batches of at most ``batch_max``, in order.

    A batch is cut when ``batch_max`` items wait, or when items wait and
    ``within`` seconds have passed since the previous cut (the first items
    after a quiet spell go at once). What is left when the source ends is
    yielded; an error of the source is raised after the batches before it.
    """
    if batch_max < 1:
        raise ValueError(f"batch_max must be at least 1, got {batch_max}")
    waiting: list[T] = []
    end: list[_End] = []
    arrived, room = asyncio.Event(), asyncio.Event()

    async def pump() -> None:
        try:
            async for chunk in chunks:
                while len(waiting) >= batch_max:  # a full batch waits: hold the source back
                    room.clear()
                    await room.wait()
                waiting.extend(chunk)
                arrived.set()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            end.append(_End(exc))
        else:
            end.append(_End())
        arrived.set()

    task = asyncio.create_task(pump(), name="paced-batches")
    cut = float("-inf")
    try:
        while True:
            if waiting and (len(waiting) >= batch_max or end or clock() - cut >= within):
                batch = waiting[:batch_max]
                del waiting[:batch_max]
                room.set()
                cut = clock()
                yield batch
                continue
            if end:
                if end[0].error is not None:
                    raise end[0].error
                return
            arrived.clear()
            wait = None if not waiting else max(0.0, cut + within - clock())
            try:
                await asyncio.wait_for(arrived.wait(), wait)
            except TimeoutError:
                pass
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
