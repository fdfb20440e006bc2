"""Running the stream worker: a Faust worker that drains before it stops, and lag checks.

``group_lag`` reads the consumer group's committed offsets and the topics' end
offsets from the broker, so anyone (``memstrata up`` on Ctrl-C, a test, an
operator) can tell whether everything produced so far is stored.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Sequence

import faust

from memstrata.kafka_security import kafka_client_kwargs
from streams import topics
from streams.app import StreamApp

__all__ = ["StreamWorker", "group_lag", "run_worker", "wait_drained"]

log = logging.getLogger("memstrata.stream")

INPUTS: tuple[str, ...] = (topics.TURNS, topics.CONTROL)


async def group_lag(brokers: str, group: str,
                    topic_names: Sequence[str] = INPUTS) -> dict[tuple[str, int], int]:
    """Records not yet committed by ``group``, per (topic, partition)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=brokers, **kafka_client_kwargs())
    consumer = AIOKafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False,
                                **kafka_client_kwargs())
    await admin.start()
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(t, p) for t in topic_names
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        ends = await consumer.end_offsets(tps) if tps else {}
        try:
            done = await admin.list_consumer_group_offsets(group, partitions=tps)
        except Exception:  # noqa: BLE001 - no such group yet: nothing committed
            done = {}
        out = {}
        for tp in tps:
            meta = done.get(tp)
            committed = meta.offset if meta is not None and meta.offset >= 0 else 0
            out[(tp.topic, tp.partition)] = max(0, ends[tp] - committed)
        return out
    finally:
        await consumer.stop()
        await admin.close()


async def wait_drained(brokers: str, group: str, timeout_s: float,
                       topic_names: Sequence[str] = INPUTS, poll_s: float = 0.25) -> bool:
    """Wait until ``group`` has committed every record of ``topic_names``; False on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            lag = await group_lag(brokers, group, topic_names)
            if not any(lag.values()):
                return True
        except Exception as exc:  # noqa: BLE001 - broker busy; try again
            log.debug("lag check failed: %s", exc)
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(poll_s)


class StreamWorker(faust.Worker):
    """A Faust worker that, on SIGINT/SIGTERM, first waits for its topics to drain.

    ``drain_timeout_s = 0`` stops at once (what a worker of a shared group
    does: the partitions move to the others, uncommitted records are re-read).
    """

    def __init__(self, stream_app: StreamApp, *, drain_timeout_s: float = 0.0,
                 **kwargs: object) -> None:
        super().__init__(stream_app.app, **kwargs)  # type: ignore[arg-type]
        self.stream_app = stream_app
        self.drain_timeout_s = drain_timeout_s

    async def _stop_on_signal(self, sig: signal.Signals) -> None:  # type: ignore[override]
        if self.drain_timeout_s > 0:
            log.warning("stopping: waiting up to %.0fs for the topics to drain",
                        self.drain_timeout_s)
            ok = await wait_drained(self.stream_app.brokers, self.app.conf.id,
                                    self.drain_timeout_s)
            if not ok:
                log.warning("topics not drained after %.0fs: the rest stays in the broker",
                            self.drain_timeout_s)
        await super()._stop_on_signal(sig)


def run_worker(stream_app: StreamApp, *, drain_timeout_s: float = 0.0,
               loglevel: str = "warning") -> None:
    """Run until SIGINT/SIGTERM (blocks; raises SystemExit when done)."""
    worker = StreamWorker(stream_app, drain_timeout_s=drain_timeout_s, loglevel=loglevel,
                          quiet=True, redirect_stdouts=False)
    worker.execute_from_commandline()
