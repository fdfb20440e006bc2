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
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstrata.config import Settings
from memstrata.llm.metrics import register_llm_metrics
from streams import topics
from streams.app import ExtraService, build_app
from streams.broker import EmbeddedBroker, ensure_topics
from streams.metrics import StreamMetrics
from streams.settings import BROKER_FILE, KafkaSettings, StreamSettings

__all__ = ["StreamRuntime", "write_broker_file"]

log = logging.getLogger("memstrata.stream")


def write_broker_file(data_dir: Path, brokers: str) -> Path:
    path = data_dir / BROKER_FILE
    path.write_text(json.dumps({"brokers": brokers, "pid": os.getpid(),
                                "started": time.time()}), encoding="utf-8")
    return path


@dataclass
class StreamRuntime:
    """Everything one worker process runs; :meth:`run` blocks until SIGINT/SIGTERM."""

    settings: Settings
    stream: StreamSettings = field(default_factory=lambda: StreamSettings())
    kafka: KafkaSettings = field(default_factory=lambda: KafkaSettings())
    #: Extra asyncio services for the worker's loop (see the module docstring).
    services: Sequence[ExtraService] = ()
    #: Called with the broker address once it is known (``up`` prints it).
    on_ready: Callable[[str], None] | None = None
    open_memory: Callable[[Settings], Any] | None = None

    def run(self, *, embedded_broker: bool) -> None:
        from streams.worker import run_worker

        data_dir = self.settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        broker: EmbeddedBroker | None = None
        broker_file: Path | None = None
        memory = None
        try:
            if embedded_broker:
                broker = EmbeddedBroker(log_dir=data_dir / "broker").start()
                brokers = broker.address
            else:
                brokers = self.kafka.resolve_brokers(data_dir)
            asyncio.run(ensure_topics(brokers, topics.specs(self.kafka.partitions,
                                                            self.kafka.replication)))
            settings = self.settings
            if "tantivy_commit" not in settings.model_fields_set and \
                    "MEMSTRATA_TANTIVY_COMMIT" not in os.environ:
                # The worker flushes after every batch, before it commits offsets:
                # tantivy can commit then too instead of on every write.
                settings = settings.model_copy(update={"tantivy_commit": "flush"})
            memory = (self.open_memory or _open_memory)(settings)
            metrics = StreamMetrics.create()
            # memstrata_llm_fallbacks_total: L0 windows the LLM failed to build.
            register_llm_metrics(metrics.registry, getattr(memory, "meter", None))
            if self.stream.metrics_port:
                metrics.serve(self.stream.metrics_port, self.stream.metrics_addr)
            app = build_app(memory, brokers, stream=self.stream, kafka=self.kafka,
                            work_dir=data_dir / "stream-worker", services=self.services,
                            service_arg=memory, metrics=metrics)
            if broker is not None:
                broker_file = write_broker_file(data_dir, brokers)
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


def _open_memory(settings: Settings) -> Any:
    from memstrata.memory import Memory

    return Memory.open(settings)
