"""One worker run shared by test modules that each need a worker over the shared broker.

A worker process costs seconds to start (imports, the encoder, a group join) and
seconds to stop. test_poison and test_dlq_and_deletes each send their events
to one worker, wait until it drained, and then read what it stored; their
scopes and dead-letter keys are their own, so one worker can take both. Each
module registers what it sends and reads (:class:`Part`); the first module that
asks starts the worker, sends every registered part, drains once and reads
each part's result. A module run alone still gets a run (with only the parts
imported in that session).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstrata.config import Settings
from memstrata.memory import Memory
from streams.broker import EmbeddedBroker
from streams.produce import StreamProducer
from tests.integration.streams.harness import WorkerProc, start_group_at_end

#: The union of the parts' worker settings (each part states why it needs its own).
ENV = {
    # test_dlq_and_deletes: a 300-character content is refused (too_large); test_poison's
    # good turns are shorter, and its 1 MB value is refused by size before any field.
    "MEMSTRATA_TURN_MAX_CONTENT_CHARS": "200",
}


@dataclass(frozen=True)
class Part:
    """What one module sends, and what it reads from the worker's data dir afterwards."""

    name: str
    send: Callable[[StreamProducer], Awaitable[None]]
    #: (memory, the DLQ's records) -> the module's result
    read: Callable[[Memory, list[Any]], dict[str, Any]]


_parts: dict[str, Part] = {}


def register(part: Part) -> None:
    _parts[part.name] = part


def run_all(broker: EmbeddedBroker, tmp: Path) -> dict[str, dict[str, Any]]:
    """Start one worker, send every registered part, drain, read each part's result."""
    from streams import topics
    from tests.integration.streams.harness import read_topic

    parts = list(_parts.values())
    group = "memstrata-test-one-worker"
    start_group_at_end(broker.address, group)
    worker = WorkerProc(broker.address, tmp / "data", group, tmp, **ENV).start()

    async def produce() -> None:
        async with StreamProducer(broker.address) as p:
            for part in parts:
                await part.send(p)
            await p.flush()

    try:
        asyncio.run(produce())
        worker.drain()
        alive = worker.alive()
    finally:
        worker.stop()
    dlq = read_topic(broker.address, topics.DLQ)
    out: dict[str, dict[str, Any]] = {}
    with Memory.open(Settings(data_dir=tmp / "data")) as memory:
        for part in parts:
            out[part.name] = {"alive": alive, "log": worker.log_text,
                              **part.read(memory, dlq)}
    return out
