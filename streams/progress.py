"""How far the turns topic is stored, and how long a control event waits for it.

A close or delete names the turn offsets it follows (``after``); applied
before those turns are stored, it would close a window too early or miss
turns it should delete. :class:`TurnProgress` knows what is stored (by this
worker, or by the group before a rebalance), and :func:`wait_for_turns` waits
on it within the control-wait bounds, never for an offset that cannot come.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from memstrata.wire import ControlEvent
from streams.metrics import StreamMetrics
from streams.records import EndOffsets, Record
from streams.settings import StreamSettings

__all__ = ["TurnProgress", "abandon", "wait_for_turns", "within"]

log = logging.getLogger("memstrata.stream")

T = TypeVar("T")


async def within(aw: Awaitable[T], timeout_s: float) -> T:
    """``aw``'s result, or TimeoutError after ``timeout_s`` without waiting for it to wind down.

    ``asyncio.wait_for`` waits for the cancelled call to finish; a broker client
    that hangs in its own cleanup (seen with aiokafka's clients against tansu)
    would then hold the control agent, and every close and delete behind it,
    for good. The abandoned call is cancelled and left to end on its own.
    """
    task = asyncio.ensure_future(aw)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        abandon(task)
        raise TimeoutError(f"no answer within {timeout_s:.1f}s")
    return task.result()


def abandon(task: "asyncio.Future[Any]") -> None:
    """Cancel a call and leave it to end on its own, its outcome read when it does (so
    asyncio does not log it as never retrieved)."""
    task.cancel()
    task.add_done_callback(_quiet)


def _quiet(task: "asyncio.Future[Any]") -> None:
    if not task.cancelled():
        task.exception()


class TurnProgress:
    """Offsets of the turns topic stored so far, per partition; control events wait on it.

    What this worker stored is noted as it happens. What another worker stored
    before a rebalance handed the partition over is in the group's committed
    offsets (committed only after the stores had the data), which
    ``committed`` fetches from the broker. ``ends`` reads the topic's end
    offsets, to tell an ``after`` no partition can ever reach (:meth:`reachable`).
    """

    def __init__(self,
                 committed: Callable[[list[int]], Awaitable[dict[int, int]]] | None = None,
                 ends: EndOffsets | None = None) -> None:
        self.done: dict[int, int] = {}
        self.floor: dict[int, int] = {}
        self._committed = committed
        self._ends = ends
        #: The end offsets last read (an ``after`` within them needs no new read).
        self._known_ends: dict[int, int] = {}
        self._changed = asyncio.Condition()

    def forget(self) -> None:
        """Drop every offset noted: a fresh broker (a recycle) numbers from 0 again."""
        self.done.clear()
        self.floor.clear()
        self._known_ends.clear()

    def reached(self, partition: int, offset: int) -> bool:
        have = max(self.done.get(partition, 0), self.floor.get(partition, 0))
        return have >= offset

    async def advance(self, partition: int, next_offset: int) -> None:
        async with self._changed:
            if next_offset > self.done.get(partition, 0):
                self.done[partition] = next_offset
            self._changed.notify_all()

    def _have(self, partition: int) -> int:
        return max(self.done.get(partition, 0), self.floor.get(partition, 0))

    async def reachable(self, after: dict[int, int], owned: Callable[[int], bool],
                        timeout_s: float = 10.0) -> tuple[dict[int, int], list[str]]:
        """``after`` without what no partition can reach, and why each cut was made.

        A control event is produced after the turns it follows, so when it is
        read each of its offsets is at most its partition's end offset. An
        offset past the end (a bogus or stale producer, a topic made again) is
        cut to the end: the event follows every turn that exists. A partition
        the topic does not have is dropped. Without ``ends``, or when the broker
        does not answer within ``timeout_s``, ``after`` is kept as it is (the
        absolute wait bound still applies).
        """
        pending = {p: o for p, o in after.items() if owned(p) and not self.reached(p, o)}
        if self._ends is None or not pending:
            return after, []
        known = self._known_ends
        if any(p not in known or o > known[p] for p, o in pending.items()):
            try:
                known = self._known_ends = dict(await within(self._ends(), timeout_s))
            except Exception as exc:  # noqa: BLE001 - cannot judge now: wait, bounded
                log.warning("cannot read the turns topic's end offsets (%s: %s): the "
                            "control event's offsets %s are waited for as they are",
                            type(exc).__name__, exc, pending)
                return after, []
        fixed = dict(after)
        why: list[str] = []
        for p, o in pending.items():
            if p not in known:
                del fixed[p]
                why.append(f"partition {p} does not exist")
            elif o > known[p]:
                fixed[p] = known[p]
                why.append(f"offset {o} of partition {p} is past its end ({known[p]})")
        return fixed, why

    async def wait(self, after: dict[int, int], owned: Callable[[int], bool],
                   timeout_s: float, poll_s: float = 1.0,
                   max_wait_s: float | None = None) -> bool:
        """Wait until every owned partition in ``after`` is stored up to its offset.

        A partition that lags but moves is waited for while it moves, up to
        ``max_wait_s`` in all; ``timeout_s`` bounds a stall (no progress at all
        for that long). False when either ran out: the caller goes ahead.
        """
        def missing() -> list[int]:
            return [p for p, o in after.items() if owned(p) and not self.reached(p, o)]

        seen = {p: self._have(p) for p in after}
        started = time.monotonic()
        last_call = float("inf") if max_wait_s is None else started + max_wait_s
        deadline = min(started + timeout_s, last_call)
        while missing():
            if self._committed is not None:
                try:  # bounded: a stuck broker call must not outlast the stall timeout
                    got = await within(self._committed(missing()),
                                       max(poll_s, deadline - time.monotonic()))
                    for p, o in got.items():
                        self.floor[p] = max(self.floor.get(p, 0), o)
                except Exception as exc:  # noqa: BLE001 - the broker is busy: wait and retry
                    log.debug("cannot read committed offsets: %s", exc)
                if not missing():
                    break
            now = {p: self._have(p) for p in after}
            if any(now[p] > seen[p] for p in after):
                seen = now
                deadline = min(time.monotonic() + timeout_s, last_call)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            async with self._changed:
                try:
                    await asyncio.wait_for(self._changed.wait(), min(poll_s, left))
                except TimeoutError:
                    pass
        return True


async def wait_for_turns(progress: TurnProgress, ev: ControlEvent, rec: Record, *,
                         owned: Callable[[int], bool], lim: StreamSettings,
                         metrics: StreamMetrics) -> None:
    """Wait until the turns the event follows are stored, never for an offset that
    cannot come and never longer than ``control_wait_max_s`` in all.

    Turns are usually stored within ``freshness_s``: only an event still
    waiting then has its offsets checked against the topic's end (a broker
    call), so a burst of closes costs no extra round trips.
    """
    started = time.monotonic()
    grace = min(lim.control_wait_s, lim.freshness_s, lim.control_wait_max_s)
    if await progress.wait(ev.after, owned, lim.control_wait_s,
                           poll_s=min(1.0, grace), max_wait_s=grace):
        return
    after, cuts = await progress.reachable(ev.after, owned)
    if cuts:
        metrics.control_after_cut.labels("unreachable").inc()
        log.warning("%s for %s/%s (control record %d@%d): %s; it waits only for the "
                    "turns that exist", ev.type, ev.scope, ev.session_id, rec.partition,
                    rec.offset, "; ".join(cuts))
    left = max(0.0, lim.control_wait_max_s - (time.monotonic() - started))
    if await progress.wait(after, owned, lim.control_wait_s, max_wait_s=left):
        return
    took = time.monotonic() - started
    why = ("no progress for %.0fs (MEMSTRATA_STREAM_CONTROL_WAIT_S)" % lim.control_wait_s
           if took < lim.control_wait_max_s else
           "waited %.0fs in all (MEMSTRATA_STREAM_CONTROL_WAIT_MAX_S)" % took)
    metrics.control_after_cut.labels(
        "stalled" if took < lim.control_wait_max_s else "deadline").inc()
    log.warning("%s for %s/%s applied although its turns %s are not all stored: %s",
                ev.type, ev.scope, ev.session_id, after, why)
