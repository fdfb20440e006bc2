"""Recycling the embedded broker: a fresh tansu once the stream is drained (ADR 0006).

tansu (memory storage) keeps every record until it stops, a deleted user's
included. Every acknowledged turn is in the stores before Ingest answers
(ADR 0001), so a broker whose topics the worker's group has committed to their
ends holds nothing the stores lack: it can be killed and started again, empty,
behind the same gate (same public address, same login), with every topic
created again. Clients reconnect; a produce that was held at the gate during
the recycle fails its connection and is retried by the client library on the
new broker.

:meth:`streams.broker.GuardedBroker.recycle` drives it: the gate holds every
client but a one-off login of the parent's, which checks the drain
(:func:`streams.broker.lag_and_layout`), has the gate restart tansu, and creates
the topics again (:func:`streams.broker.recreate_topics`) before the gate lets the clients go on. The
process hosting the worker runs :class:`Recycler`, a periodic check that
recycles when tansu's RSS is over the limit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["Recycler", "embedded_recycler"]

log = logging.getLogger("memstrata.stream")


class RecyclableBroker(Protocol):
    def tansu_rss_bytes(self) -> float: ...

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
    """

    def __init__(self, broker: RecyclableBroker, *, group: str, drain: Sequence[str],
                 topics: Mapping[str, int], limit_bytes: float, interval_s: float,
                 on_killed: Callable[[], None] | None = None,
                 erasures: Callable[[], float] | None = None, erase_within_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.broker = broker
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
        loop = asyncio.get_running_loop()
        done = await loop.run_in_executor(None, self.broker.recycle, self.group, self.drain,
                                          self.topics, self.on_killed)
        if done:
            self.recycles += 1
            # Deletes applied up to this check are gone with the old broker; a later one
            # starts its own wait at the next check.
            self._erased, self._erase_since = applied, None
            log.info("embedded broker recycled (%s; RSS was %.1f MB, limit %.1f MB): its "
                     "records are all stored; recycles so far: %d",
                     "a delete was due" if erase_due else "memory", rss / 1e6,
                     self.limit_bytes / 1e6, self.recycles)
        else:
            self.busy += 1
        return bool(done)

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


def embedded_recycler(broker: RecyclableBroker, kafka: Any, registry: Any,
                      on_killed: Callable[[], None]) -> list[Callable[[Any], Any]]:
    """The worker's extra service that recycles ``broker`` (none when the limit is 0).

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
                        erasures=erasures, erase_within_s=kafka.embedded_erase_within_s)
    recycler.register_metrics(registry)
    return [recycler.run]
