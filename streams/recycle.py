"""Recycling the embedded broker: a fresh tansu once the stream is drained (ADR 0006).

tansu (memory storage) keeps every record until it stops, a deleted user's
included. Every acknowledged turn is in the stores before Ingest answers
(ADR 0001), so a broker whose topics the worker's group has committed to their
ends holds nothing the stores lack: it can be killed and started again, empty,
behind the same gate (same public address, same login), with every topic
created again. Clients reconnect; a produce that was held at the gate during
the recycle fails its connection and is retried by the client library on the
new broker.

Under steady Ingest the topics never drain by themselves, and the gate cannot
tell producers from consumers. So the hosting process also closes an
:class:`IntakeHold` first: the embedded Ingest (``query_service.publish.
StoredPublisher``) waits at it before publishing, the calls already past it are
confirmed stored, the worker drains to the ends, and only then is tansu
recycled; the hold is opened again whatever happens, within ``hold_s``.

:meth:`streams.broker.GuardedBroker.recycle` drives it: the gate holds every
client but a one-off login of the parent's, which checks the drain
(:func:`streams.broker.lag_and_layout`), has the gate restart tansu, and creates
the topics again (:func:`streams.broker.recreate_topics`) before the gate lets the clients go on. The
process hosting the worker runs :class:`Recycler`, a periodic check that
recycles when tansu's RSS is over the limit.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["IntakeHold", "Recycler", "embedded_recycler", "forget_changelog_offsets",
           "quiet_reconnects"]

log = logging.getLogger("memstrata.stream")


#: The longest a recycle holds the embedded Ingest (settle, drain, restart) by default.
HOLD_S = 10.0


class IntakeHold:
    """The embedded Ingest's door: closed by a recycle while the worker drains.

    A publisher calls :meth:`enter` before it publishes and :meth:`leave` once the
    call has seen its records stored (or failed). While the door is closed,
    :meth:`enter` waits; ``None`` after ``timeout_s`` (the caller answers UNAVAILABLE
    with :meth:`retry_after_s`). A token not left within its ``for_s`` (a call that
    died between publish and confirm) stops counting, so it never blocks a recycle.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._open = asyncio.Event()
        self._open.set()
        self._flying: dict[int, float] = {}  # token -> deadline
        self._next = 0
        self._reopens_at: float | None = None
        #: Calls that waited at the closed door, and those that gave up waiting.
        self.waited = 0
        self.timed_out = 0

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    async def enter(self, timeout_s: float, for_s: float) -> int | None:
        """A token once the door is open (waiting up to ``timeout_s``); None if it stays shut."""
        if not self._open.is_set():
            self.waited += 1
            try:
                await asyncio.wait_for(self._open.wait(), timeout_s)
            except asyncio.TimeoutError:
                self.timed_out += 1
                return None
        self._next += 1
        self._flying[self._next] = self.clock() + for_s
        return self._next

    def leave(self, token: int | None) -> None:
        if token is not None:
            self._flying.pop(token, None)

    def in_flight(self) -> int:
        """Calls past the door whose records are not confirmed yet (expired ones dropped)."""
        now = self.clock()
        for token in [t for t, until in self._flying.items() if until <= now]:
            del self._flying[token]
        return len(self._flying)

    def retry_after_s(self) -> float:
        """A hint for a caller turned away: until the door reopens at the latest."""
        if self._reopens_at is None:
            return 1.0
        return max(1.0, self._reopens_at - self.clock())

    def close(self, hold_s: float) -> None:
        self._reopens_at = self.clock() + hold_s
        self._open.clear()

    def open(self) -> None:
        self._reopens_at = None
        self._open.set()

    async def settle(self, timeout_s: float, poll_s: float = 0.02) -> bool:
        """Until every call past the door has confirmed (True), or ``timeout_s`` (False)."""
        deadline = self.clock() + timeout_s
        while self.in_flight():
            if self.clock() >= deadline:
                return False
            await asyncio.sleep(poll_s)
        return True


#: How long after a recycle aiokafka's disconnect and rejoin messages are expected.
QUIET_S = 30.0
#: aiokafka's loggers (each logger's filters see only its own records).
AIOKAFKA_LOGGERS = ("aiokafka", "aiokafka.conn", "aiokafka.cluster", "aiokafka.admin.client",
                    "aiokafka.consumer.consumer", "aiokafka.consumer.fetcher",
                    "aiokafka.consumer.group_coordinator", "aiokafka.producer.producer",
                    "aiokafka.producer.sender", "faust.transport.drivers.aiokafka")


class _Reconnects(logging.Filter):
    """Logs aiokafka's (and Faust's aiokafka driver's) warnings and errors at INFO while a
    recycle's window is open.

    A recycle closes every client connection and forgets every group: the fetch
    errors, dead coordinators and "member_id was not recognized" that follow are
    the expected way back, not faults. Outside the window nothing is changed.
    """

    def __init__(self) -> None:
        super().__init__()
        self.until = 0.0
        self.active = 0
        #: Records logged at INFO instead of WARNING or ERROR.
        self.downgraded = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO and (self.active or time.monotonic() < self.until):
            record.msg = f"(expected during an embedded broker recycle) {record.msg}"
            record.levelno, record.levelname = logging.INFO, "INFO"
            self.downgraded += 1
        return True


_RECONNECTS = _Reconnects()


@contextmanager
def quiet_reconnects(after_s: float = QUIET_S) -> Iterator[_Reconnects]:
    """While inside, and ``after_s`` seconds after, aiokafka's warnings and errors are INFO."""
    for name in AIOKAFKA_LOGGERS:
        logger = logging.getLogger(name)
        if _RECONNECTS not in logger.filters:
            logger.addFilter(_RECONNECTS)
    _RECONNECTS.active += 1
    try:
        yield _RECONNECTS
    finally:
        _RECONNECTS.active -= 1
        _RECONNECTS.until = max(_RECONNECTS.until, time.monotonic() + after_s)


class RecyclableBroker(Protocol):
    def tansu_rss_bytes(self) -> float: ...

    async def wait_drained(self, group: str, drain: Sequence[str], timeout_s: float) -> bool: ...

    def recycle(self, group: str, drain: Sequence[str], topics: Mapping[str, int],
                on_killed: Callable[[], None] | None = None) -> bool: ...


class Recycler:
    """Every ``interval_s``: when tansu's RSS is over ``limit_bytes``, or a delete applied
    ``erase_within_s`` ago or more is still in it, recycle it if drained.

    ``erasures``: how many deletes the worker has applied so far (a counter); None
    (or ``erase_within_s`` 0) recycles for memory only. ``clock``: monotonic seconds.

    ``on_killed`` runs after the old tansu is gone and before any client is let in
    again: the hosting process forgets the offsets it noted (a fresh tansu numbers
    every partition from 0 again).

    ``intake``: the door of this process's Ingest. Closed first, so the topics can
    drain under steady traffic; open again within ``hold_s`` (settle, drain and
    restart), recycled or not. ``quiet_s``: how long after a recycle the clients'
    expected disconnect and rejoin messages are logged at INFO (:func:`quiet_reconnects`).
    """

    def __init__(self, broker: RecyclableBroker, *, group: str, drain: Sequence[str],
                 topics: Mapping[str, int], limit_bytes: float, interval_s: float,
                 on_killed: Callable[[], None] | None = None,
                 erasures: Callable[[], float] | None = None, erase_within_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic,
                 intake: IntakeHold | None = None, hold_s: float = HOLD_S,
                 quiet_s: float = QUIET_S) -> None:
        self.broker = broker
        #: Closed while a recycle drains (None: nothing of this process produces).
        self.intake = intake
        self.hold_s = hold_s
        self.quiet_s = quiet_s
        #: Seconds intake was held by the last recycle attempt (0 without an intake).
        self.last_hold_s = 0.0
        self.erasures = erasures if erase_within_s > 0 else None
        self.erase_within_s = erase_within_s
        self.clock = clock
        #: Deletes the broker held none of (at its last recycle), and since when a later
        #: one has been waiting.
        self._erased = self.erasures() if self.erasures is not None else 0.0
        self._erase_since: float | None = None
        self.group = group
        self.drain = list(drain)
        self.topics = dict(topics)
        self.limit_bytes = limit_bytes
        self.interval_s = interval_s
        self.on_killed = on_killed
        #: Recycles done, and checks that found the stream not drained.
        self.recycles = 0
        self.busy = 0

    async def check_once(self) -> bool:
        """One check; True when tansu was recycled."""
        rss = self.broker.tansu_rss_bytes()
        now = self.clock()
        applied = self.erasures() if self.erasures is not None else self._erased
        if applied > self._erased and self._erase_since is None:
            self._erase_since = now
        erase_due = (self._erase_since is not None
                     and now - self._erase_since >= self.erase_within_s)
        if rss <= self.limit_bytes and not erase_due:
            return False
        done = await self._recycle()
        if done:
            self.recycles += 1
            # Deletes applied up to this check are gone with the old broker; a later one
            # starts its own wait at the next check.
            self._erased, self._erase_since = applied, None
            log.info("embedded broker recycled (%s; RSS was %.1f MB, limit %.1f MB, now "
                     "%.1f MB; Ingest held %.2f s): its records are all stored, the DLQ's "
                     "carried over; recycles so far: %d",
                     "a delete was due" if erase_due else "memory", rss / 1e6,
                     self.limit_bytes / 1e6, self.broker.tansu_rss_bytes() / 1e6,
                     self.last_hold_s, self.recycles)
        else:
            self.busy += 1
        return bool(done)

    async def _recycle(self) -> bool:
        """Hold intake, let what passed be stored and drained, then recycle; open again."""
        loop = asyncio.get_running_loop()
        on_killed = self.on_killed

        def killed() -> None:  # on this loop: the state it resets is the loop's
            if on_killed is not None:
                asyncio.run_coroutine_threadsafe(_call(on_killed), loop).result(30)

        call = functools.partial(self.broker.recycle, self.group, self.drain, self.topics,
                                 killed)
        if self.intake is None:
            with quiet_reconnects(self.quiet_s):
                return bool(await loop.run_in_executor(None, call))
        start = loop.time()
        self.intake.close(self.hold_s)
        try:
            if not await self.intake.settle(self.hold_s):
                log.info("embedded broker recycle put off: Ingest calls still unconfirmed "
                         "after %.1f s", self.hold_s)
                return False
            left = self.hold_s - (loop.time() - start)
            if left <= 0 or not await self.broker.wait_drained(self.group, self.drain, left):
                log.info("embedded broker recycle put off: the worker did not drain within "
                         "%.1f s", self.hold_s)
                return False
            with quiet_reconnects(self.quiet_s):
                return bool(await loop.run_in_executor(None, call))
        finally:
            self.intake.open()
            self.last_hold_s = loop.time() - start

    async def run(self, _memory: Any = None) -> None:
        """The periodic check, as an extra service of the worker's loop."""
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.check_once()
            except Exception as exc:  # noqa: BLE001 - the next check tries again
                log.warning("embedded broker recycle failed: %s: %s", type(exc).__name__, exc)

    def register_metrics(self, registry: Any) -> None:
        """``memstrata_stream_broker_recycles_total`` on a prometheus ``registry``."""
        from prometheus_client.core import CounterMetricFamily
        from prometheus_client.registry import Collector

        recycler = self

        class _Recycles(Collector):
            def collect(self) -> Any:
                yield CounterMetricFamily(
                    "memstrata_stream_broker_recycles",
                    "Times the embedded broker was recycled (restarted empty) once drained.",
                    value=recycler.recycles)

        registry.register(_Recycles())


async def _call(fn: Callable[[], None]) -> None:
    fn()


def forget_changelog_offsets(faust_app: Any) -> int:
    """Forget the changelog offsets Faust's table recovery noted; how many partitions.

    A fresh tansu numbers the changelog from 0 again. Faust keeps the offsets it saw
    and, at the rebalance that follows the recycle, refuses a changelog whose end is
    below them (``ConsistencyError``, the worker stops): seen under steady Ingest. The
    table's content stays in memory; the rebalance assigns the partitions again.
    """
    recovery = faust_app.tables.recovery
    tps = set(recovery.active_offsets) | set(recovery.standby_offsets)
    for tp in tps:
        recovery.revoke(tp)
    return len(tps)


def embedded_recycler(broker: RecyclableBroker, kafka: Any, registry: Any,
                      on_killed: Callable[[], None],
                      intake: IntakeHold | None = None) -> list[Callable[[Any], Any]]:
    """The worker's extra service that recycles ``broker`` (none when the limit is 0).

    ``intake``: the door of the embedded Ingest in this process, held while it drains.

    The drain covers what the worker's group reads (the turns and control topics);
    the topics of ``streams.topics.specs`` are created again besides whatever the old
    broker had (Faust's changelog and leader topics among them).
    """
    from streams import topics

    if kafka.embedded_recycle_rss_mb <= 0:
        return []

    def erasures() -> float:
        """Deletes of users and sessions the worker has applied (its own counter)."""
        return sum(registry.get_sample_value("memstrata_stream_control_applied_total",
                                             {"type": kind}) or 0.0
                   for kind in ("delete_user", "delete_session"))

    layout = {s.name: s.partitions
              for s in topics.specs(kafka.partitions, kafka.replication, turns=kafka.topic_turns)}
    recycler = Recycler(broker, group=kafka.group, drain=[kafka.topic_turns, topics.CONTROL],
                        topics=layout, limit_bytes=kafka.embedded_recycle_rss_mb * 1e6,
                        interval_s=kafka.embedded_recycle_check_s, on_killed=on_killed,
                        erasures=erasures, erase_within_s=kafka.embedded_erase_within_s,
                        intake=intake)
    recycler.register_metrics(registry)
    return [recycler.run]
