"""The stream worker's process: open memory, optionally start the broker, run, clean up.

``memstrata up`` is the embedded default: tansu on a free loopback port, the
topics, the worker and the embedded stores in one process tree (embedded
stores admit one writer per data dir). Extra asyncio services (the gRPC
server, for one) run on the worker's event loop through ``services``: each is
an ``async def service(memory)`` started when the worker starts and cancelled
when it stops, so they share the one open :class:`~memstrata.memory.Memory`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstrata.config import Settings
from memstrata.kafka import write_broker_file as _record_broker
from memstrata.limits import TurnLimits
from memstrata.llm.metrics import register_llm_metrics
from memstrata.roles import HostedMemory
from memstrata.process_memory import register_cache_metrics
from memstrata.redact.metrics import register_redaction_metrics
from streams import topics
from streams.app import ExtraService, StreamApp
from streams.broker import GuardedBroker, ensure_topics
from streams.metrics import StreamMetrics
from streams.recycle import IntakeHold, embedded_recycler
from memstrata.kafka import KafkaSettings
from streams.settings import StreamSettings

__all__ = ["StoredTurns", "StreamRuntime", "write_broker_file"]

log = logging.getLogger("memstrata.stream")

#: The stream worker's settings profile: core settings it runs with unless a variable,
#: the file or an argument sets them (the operator's value always wins). Logged at start.
#: - ``tantivy_commit="flush"``: the worker flushes after every batch, before it commits
#:   offsets, so BM25 commits then instead of on every write (turn-at-a-time appends
#:   stay cheap; what a committed offset covers is searchable, as with ``write``).
WORKER_PROFILE: dict[str, Any] = {"tantivy_commit": "flush"}


def worker_settings(settings: Settings) -> tuple[Settings, dict[str, Any]]:
    """``settings`` with :data:`WORKER_PROFILE` on the fields nobody set, and what it changed."""
    applied = {k: v for k, v in WORKER_PROFILE.items() if k not in settings.model_fields_set}
    return (settings.model_copy(update=applied) if applied else settings), applied



def write_broker_file(data_dir: Path, brokers: str, broker: GuardedBroker | None = None) -> Path:
    """Record the embedded broker (0600): its address and where its login is kept."""
    if broker is None:
        return _record_broker(data_dir, brokers)
    return _record_broker(data_dir, brokers, login=broker.login, login_file=broker.login_file,
                          isolated=broker.isolated)


class StoredTurns:
    """Which records of the turns topic this process's worker has stored, or refused.

    The embedded Ingest acknowledges on this (``query_service.publish.StoredPublisher``).
    :meth:`watch` wraps the worker's ``handle_turns``, which returns only once a
    batch is written and flushed (a failure stops the worker instead), and notes
    the batch's offsets after it returns, together with the records it sent to the
    DLQ: a refused record is never reported as stored.
    """

    def __init__(self, keep_refused: int = 100_000, turns_topic: str = topics.TURNS) -> None:
        self.turns_topic = turns_topic
        self.done: dict[int, int] = {}
        self._refused: OrderedDict[tuple[int, int], str] = OrderedDict()
        self._keep = keep_refused
        #: The embedded Ingest waits here while the broker is recycled (streams.recycle).
        self.intake = IntakeHold()

    def reached(self, partition: int, offset: int) -> bool:
        """True once every record of ``partition`` before ``offset`` is stored or refused."""
        return self.done.get(partition, 0) >= offset

    def refused(self, partition: int, offset: int) -> str | None:
        """Why the worker refused that record (DLQ reason and detail); None if it did not."""
        return self._refused.get((partition, offset))

    def note(self, records: Sequence[Any], dead: Sequence[Any]) -> None:
        for d in dead:
            if d.topic == self.turns_topic:
                self._refused[(d.partition, d.offset)] = f"{d.reason}: {d.detail}"
        while len(self._refused) > self._keep:
            self._refused.popitem(last=False)
        for r in records:
            if r.offset + 1 > self.done.get(r.partition, 0):
                self.done[r.partition] = r.offset + 1

    def forget(self) -> None:
        """A fresh broker numbers from 0 again: stored and refused offsets meant the old one."""
        self.done.clear()
        self._refused.clear()

    def watch(self, app: StreamApp) -> "StoredTurns":
        processor = app.processor
        handle = processor.handle_turns

        async def handle_turns(records: Sequence[Any], waiting: int | None = None) -> Any:
            out = await handle(records, waiting)
            self.note(records, out.dead)
            return out

        processor.handle_turns = handle_turns  # type: ignore[method-assign]
        return self


@dataclass
class StreamRuntime:
    """Everything one worker process runs; :meth:`run` blocks until SIGINT/SIGTERM."""

    #: The entry point's loaded settings (:func:`memstrata.config.load_config`).
    settings: Settings
    stream: StreamSettings
    kafka: KafkaSettings
    #: The core's turn-event limits (built by the entry point, with the other settings).
    turns: TurnLimits = field(kw_only=True)
    #: Extra asyncio services for the worker's loop (see the module docstring).
    services: Sequence[ExtraService] = ()
    #: Called with the broker address once it is known (``up`` prints it).
    on_ready: Callable[[str], None] | None = None
    #: Opens the worker's memory (``Memory.open`` when None).
    open_memory: Callable[[Settings], HostedMemory] | None = None
    #: The running app, once built.
    stream_app: StreamApp | None = field(default=None, init=False)
    #: What the worker has stored, for services on its loop (the embedded Ingest
    #: acknowledges on it).
    stored: StoredTurns = field(default_factory=StoredTurns, init=False)
    #: The worker's metrics; given when the caller serves them itself (``serve`` does,
    #: on its own --metrics-port).
    metrics: StreamMetrics | None = None

    def run(self, *, embedded_broker: bool) -> None:
        from streams.worker import run_worker

        data_dir = self.settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        broker: GuardedBroker | None = None
        broker_file: Path | None = None
        memory: HostedMemory | None = None
        try:
            settings, applied = worker_settings(self.settings)
            if applied:
                log.info("stream worker profile applied to settings left unset: %s",
                         ", ".join(f"{k}={v}" for k, v in sorted(applied.items())))
            # The stores first: they take the data dir's writer lock, so a second process
            # on this data dir stops here, before it touches the broker state dir.
            memory = (self.open_memory or _open_memory)(settings)
            if embedded_broker:
                # Stops a broker left running by a holder of this data dir that is gone.
                broker = GuardedBroker(log_dir=data_dir / "broker",
                                       isolation=self.kafka.embedded_isolation).start()
                brokers = broker.address
                # Every client of this process (worker, services on its loop) logs in.
                self.kafka = broker.client_settings(self.kafka)
            else:  # the setting, else a recorded embedded broker and its login
                self.kafka = self.kafka.resolve(data_dir)
                brokers = str(self.kafka.brokers)
            asyncio.run(ensure_topics(brokers, topics.specs(
                self.kafka.partitions, self.kafka.replication, turns=self.kafka.topic_turns),
                kafka=self.kafka))
            metrics = self.metrics or StreamMetrics.create()
            # memstrata_llm_fallbacks_total: L0 windows the LLM failed to build.
            register_llm_metrics(metrics.registry, memory.meter)
            # memstrata_redactions_total{tenant,kind}: what the write path masked or dropped.
            register_redaction_metrics(metrics.registry, memory)
            # memstrata_process_cache_entries{cache}: the process caches' fill.
            register_cache_metrics(metrics.registry)
            services = list(self.services)
            if broker is not None:
                broker.register_metrics(metrics.registry)
                services += embedded_recycler(broker, self.kafka, metrics.registry,
                                              self.forget_offsets, intake=self.stored.intake)
            if self.stream.metrics_port:
                metrics.serve(self.stream.metrics_port, self.stream.metrics_addr)
            app = StreamApp(memory, brokers, stream=self.stream, kafka=self.kafka,
                            work_dir=data_dir / "stream-worker", services=services,
                            service_arg=memory, metrics=metrics, turns=self.turns)
            self.stored.turns_topic = self.kafka.topic_turns
            self.stored.watch(app)
            self.stream_app = app
            if broker is not None:
                broker_file = write_broker_file(data_dir, brokers, broker)
                app.on_fatal.append(broker.stop)
            if self.on_ready:
                self.on_ready(brokers)
            try:
                run_worker(app, drain_timeout_s=self.stream.drain_timeout_s if broker else 0.0,
                           loglevel=self.stream.log_level)
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise
            finally:
                app.processor.close()
        finally:
            if memory is not None:
                memory.close()
            if broker_file is not None:
                broker_file.unlink(missing_ok=True)
            if broker is not None:
                broker.stop()

    def forget_offsets(self) -> None:
        """After a recycle (a fresh broker numbers from 0): drop the offsets noted so far."""
        self.stored.forget()
        if self.stream_app is not None:
            self.stream_app.forget_offsets()


def _open_memory(settings: Settings) -> HostedMemory:
    from memstrata.memory import Memory

    return Memory.open(settings)
