"""What the stream worker uses of Faust, mode and aiokafka beyond plain agents and topics.

Everything here is public API of the versions pinned in ``pyproject.toml``
(faust-streaming >= 0.15.3, mode-streaming >= 0.6, aiokafka >= 0.10); the
worker no longer reads private names (the consumer's read-offset map, mode's
signal-stop coroutine, the producer's partitioner). :data:`SURFACES` lists
each piece with what it is used for, and :func:`missing` says which of them an
installed version lacks (``tests/unit/streams/test_faust_compat.py`` fails on
an upgrade that removes one, naming it and the version).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import faust

__all__ = ["SURFACES", "ReadOffsets", "missing"]

#: (distribution, module, attribute path, what the worker uses it for)
SURFACES: tuple[tuple[str, str, str, str], ...] = (
    ("faust-streaming", "faust.streams", "Stream.noack_take",
     "turn and control batches, acknowledged only once stored (streams.app)"),
    ("faust-streaming", "faust.streams", "Stream.ack",
     "acknowledging a stored batch (streams.app)"),
    ("faust-streaming", "faust.sensors", "Sensor.on_message_in",
     "the read offset of each partition, for the consumer-lag metric (ReadOffsets)"),
    ("faust-streaming", "faust.sensors", "SensorDelegate.add",
     "registering ReadOffsets on ``app.sensors`` (streams.app)"),
    ("faust-streaming", "faust.transport.consumer", "Consumer.position",
     "where a partition with nothing read yet starts, for the lag metric (streams.app)"),
    ("faust-streaming", "faust.transport.consumer", "ThreadDelegateConsumer.seek_wait",
     "sending the consumer back to a record it skipped, on its own thread (streams.gaps)"),
    ("mode-streaming", "mode", "Worker.install_signal_handlers",
     "SIGINT/SIGTERM drain before stopping (streams.worker)"),
    ("mode-streaming", "mode", "Worker.stop_and_shutdown",
     "waiting for that drain before the loop closes (streams.worker)"),
    ("mode-streaming", "mode", "Service.stop", "stopping the worker after the drain"),
    ("aiokafka", "aiokafka.partitioner", "DefaultPartitioner",
     "the partition of a control event's key (streams.produce) and of a session table "
     "entry (streams.app.SessionTable)"),
    ("faust-streaming", "faust.tables.base", "Collection.partition_for_key",
     "placing a session table entry on its turns' partition (streams.app.SessionTable)"),
    ("faust-streaming", "faust.app.base", "App.on_rebalance_complete",
     "rebuilding the idle-session index after a rebalance (streams.app)"),
)


def missing() -> list[str]:
    """One line per surface the installed packages lack: attribute, package and version."""
    out = []
    for dist, module, path, use in SURFACES:
        try:
            obj: Any = importlib.import_module(module)
            for part in path.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            try:
                have = version(dist)
            except PackageNotFoundError:
                have = "not installed"
            out.append(f"{module}.{path} is missing from {dist} {have} (used for {use})")
    return out


class ReadOffsets(faust.Sensor):
    """The offset of the last record read per partition (Faust's sensor hook, public API).

    The consumer-lag metric is the partition's high watermark minus this.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.read: dict[tuple[str, int], int] = {}

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        self.read[(tp.topic, tp.partition)] = offset
