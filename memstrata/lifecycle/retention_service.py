"""The scheduled retention sweep inside ``memstrata serve``, and its metrics.

``serve`` owns the stores (directly, or through its in-process stream worker),
so it is where the sweep runs: an unfinished sweep (a restart interrupted it) is
finished at once, the first new sweep comes ``MEMSTRATA_RETENTION_FIRST_DELAY_S``
after the start, then one every ``MEMSTRATA_RETENTION_INTERVAL_S``. Each sweep
reads the policies from the keys/tenants file again, so an edit applies from the
next sweep without a restart. In Kafka mode (the service publishes to brokers the
stream workers read) the sweep's deletes are control events
(:mod:`memstrata.lifecycle.retention_topic`). The sweep runs on a thread of its
own; stopping the service stops it after the delete in hand, and the next start
finishes it.

Metrics (on the service's ``/metrics``; the tenant label is bounded by the tenants
that have a policy in the file):

* ``memstrata_retention_sessions_deleted_total{tenant}``: sessions the sweeps deleted
  (a deleted user counts each of their sessions);
* ``memstrata_retention_users_deleted_total{tenant}``: users deleted for inactivity;
* ``memstrata_retention_delete_errors_total{tenant}``: deletes that failed (retried
  by the next sweep);
* ``memstrata_retention_sweeps_total{outcome}``: finished sweeps, ``ok`` or ``errors``;
* ``memstrata_retention_sweep_duration_seconds``: how long the last sweep took;
* ``memstrata_retention_last_sweep_timestamp_seconds{tenant}``: when a sweep last
  finished for the tenant (Unix time).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from memstrata.lifecycle.retention import RetentionPolicyError, read_policies
from memstrata.lifecycle.retention_settings import RetentionSettings
from memstrata.lifecycle.retention_sweep import (
    Deleter,
    MemoryDeleter,
    SweepBusy,
    SweepReceipt,
    SweepStats,
    SweepStopped,
    Sweeper,
)

__all__ = ["RetentionCollector", "RetentionService", "state_dir"]

log = logging.getLogger("memstrata.retention")
T = TypeVar("T")


def state_dir(data_dir: Path) -> Path:
    """Where the sweep keeps its journal, receipts and ledger: ``<data dir>/retention``."""
    return Path(data_dir) / "retention"


class RetentionCollector(Collector):
    """The sweeps' counts as Prometheus metrics, read at scrape time."""

    def __init__(self, stats: SweepStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Any]:
        snap = self.stats.snapshot()
        for name, key, text in (
                ("memstrata_retention_sessions_deleted", "sessions_deleted",
                 "Sessions the retention sweeps deleted (a deleted user counts each session)"),
                ("memstrata_retention_users_deleted", "users_deleted",
                 "Users the retention sweeps deleted for inactivity"),
                ("memstrata_retention_delete_errors", "errors",
                 "Retention deletes that failed (the next sweep tries again)")):
            family = CounterMetricFamily(name, text, labels=["tenant"])
            for tenant, n in sorted(snap[key].items()):
                family.add_metric([tenant], n)
            yield family
        sweeps = CounterMetricFamily("memstrata_retention_sweeps",
                                     "Finished retention sweeps by outcome", labels=["outcome"])
        for outcome in ("ok", "errors"):
            sweeps.add_metric([outcome], snap["sweeps"].get(outcome, 0))
        yield sweeps
        duration = GaugeMetricFamily("memstrata_retention_sweep_duration_seconds",
                                     "Seconds the last retention sweep took")
        if snap["last_duration_s"] is not None:
            duration.add_metric([], snap["last_duration_s"])
        yield duration
        last = GaugeMetricFamily("memstrata_retention_last_sweep_timestamp_seconds",
                                 "When a retention sweep last finished for the tenant",
                                 labels=["tenant"])
        for tenant, ts in sorted(snap["last_sweep"].items()):
            last.add_metric([tenant], ts)
        yield last


class RetentionService:
    """Runs sweeps on a schedule over ``docs``, deleting through what ``deleter`` opens.

    ``deleter`` returns a context manager giving a :class:`Deleter` for one sweep
    (a Kafka producer is opened per sweep and closed after it).
    """

    def __init__(self, docs: Any, deleter: Callable[[], AbstractContextManager[Deleter]],
                 keys_file: Path, data_dir: Path, settings: RetentionSettings,
                 stats: SweepStats | None = None,
                 on_receipt: Callable[[SweepReceipt], None] | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.docs = docs
        #: What "now" is for the sweeps (tests fix it); None: the real clock.
        self.clock = clock
        #: Called with each finished sweep's receipt (an audit log may note it).
        self.on_receipt = on_receipt
        self.deleter = deleter
        self.keys_file = keys_file
        self.state_dir = state_dir(data_dir)
        self.settings = settings
        self.stats = stats if stats is not None else SweepStats()
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(RetentionCollector(self.stats))
        self._current: Sweeper | None = None
        #: The sweep running on its thread (awaited when the service stops).
        self._inflight: asyncio.Future[SweepReceipt | None] | None = None
        #: Receipts of the sweeps this service ran (the file keeps them all).
        self.receipts: list[SweepReceipt] = []

    @classmethod
    def for_memory(cls, memory: Any, *, keys_file: Path, settings: RetentionSettings,
                   kafka: Any = None, brokers: str | None = None,
                   **options: Any) -> "RetentionService | None":
        """The service's sweep over ``memory``: direct deletes, or (``kafka`` given with
        brokers) control events. ``memory`` is a :class:`~memstrata.roles.HostedMemory`
        (its doc store and data dir)."""
        docs, data_dir = memory.docs, memory.settings.data_dir
        if kafka is not None and (brokers or kafka.brokers):
            from memstrata.lifecycle.retention_topic import ControlTopicDeleter

            def opener() -> AbstractContextManager[Deleter]:
                return ControlTopicDeleter(kafka, brokers=brokers,
                                           apply_wait_s=settings.apply_wait_s)
        else:
            def opener() -> AbstractContextManager[Deleter]:
                return nullcontext(MemoryDeleter(memory))
        return cls(docs, opener, keys_file, Path(data_dir), settings, **options)

    def sweep_once(self, *, resume_only: bool = False) -> SweepReceipt | None:
        """One sweep now (an unfinished one is finished first); ``resume_only``: only finish
        the unfinished one. None when there was nothing to sweep."""
        try:
            policies = read_policies(self.keys_file)
        except RetentionPolicyError as exc:
            log.error("retention: no sweep: %s", exc)
            return None
        probe = Sweeper(self.docs, None, self.state_dir)
        active = {t: p for t, p in policies.items() if not p.keeps_forever}
        if not active and not probe.has_unfinished():
            return None
        with self.deleter() as deleter:
            sweeper = self._current = Sweeper(self.docs, deleter, self.state_dir,
                                              flush_every=self.settings.flush_every,
                                              stats=self.stats, **self._clock())
            try:
                if resume_only or not active:
                    receipt = sweeper.finish_unfinished()
                else:
                    receipt = sweeper.sweep(active)
            finally:
                self._current = None
        if receipt is not None:
            self.receipts.append(receipt)
            if self.on_receipt is not None:
                self.on_receipt(receipt)
        return receipt

    def _clock(self) -> dict[str, Any]:
        return {} if self.clock is None else {"clock": self.clock}

    def _guarded(self, resume_only: bool = False) -> SweepReceipt | None:
        try:
            return self.sweep_once(resume_only=resume_only)
        except (SweepStopped, SweepBusy) as exc:
            log.info("retention: %s", exc)
        except Exception:  # the service keeps serving; the next sweep retries
            log.exception("retention sweep failed; the next one tries again")
        return None

    async def run(self) -> None:
        """Sweep on the schedule until cancelled (then stop the sweep in hand)."""
        if not self.settings.enabled:
            return
        try:
            if Sweeper(self.docs, None, self.state_dir).has_unfinished():
                await self._sweep(resume_only=True)  # a restart interrupted it: finish it now
            await asyncio.sleep(self.settings.first_delay_s)
            while True:
                await self._sweep()
                await asyncio.sleep(self.settings.interval_s)
        except asyncio.CancelledError:
            current = self._current
            if current is not None:
                current.stop.set()
            raise

    async def _sweep(self, resume_only: bool = False) -> None:
        self._inflight = asyncio.ensure_future(asyncio.to_thread(self._guarded, resume_only))
        await asyncio.shield(self._inflight)

    async def alongside(self, main: Awaitable[T]) -> T:
        """Await ``main`` (the server) with the schedule running beside it."""
        task = asyncio.create_task(self.run(), name="retention-sweep")
        try:
            return await main
        finally:
            task.cancel()
            current = self._current
            if current is not None:
                current.stop.set()
            await asyncio.gather(task, return_exceptions=True)
            if self._inflight is not None:  # ends after the delete in hand (journal kept)
                await asyncio.gather(self._inflight, return_exceptions=True)


class ServeRetention:
    """What ``memstrata serve`` wires in: the schedule beside the server, its metrics.

    Holds no service when retention cannot run here (the memory has no doc store of
    its own); ``alongside`` then only awaits the server.
    """

    def __init__(self, service: RetentionService | None) -> None:
        self.service = service
        #: Registries to serve on the service's ``/metrics`` (``extra_metrics``).
        self.metrics: list[CollectorRegistry] = [service.registry] if service else []

    async def alongside(self, main: Awaitable[T]) -> T:
        if self.service is None:
            return await main
        return await self.service.alongside(main)


def serve_retention(memory: Any, config: Any, keys_file: Path, *,
                    kafka: Any = None) -> ServeRetention:
    """The sweep of a ``serve`` process over ``memory``, with its settings from ``config``.

    ``kafka`` with brokers (Kafka mode: the stream workers own the writes) makes the
    sweep publish control events; otherwise it deletes through ``memory`` (the service
    alone, or the embedded stream worker's memory it shares).
    """
    settings = config.get(RetentionSettings)
    if not settings.enabled:
        return ServeRetention(None)
    return ServeRetention(RetentionService.for_memory(memory, keys_file=keys_file,
                                                      settings=settings, kafka=kafka))
