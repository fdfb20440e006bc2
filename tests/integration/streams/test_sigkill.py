"""A worker SIGKILLed mid-stream and restarted loses nothing and duplicates nothing.

Offsets are committed only after the stores have the data, and writes are
upserts by deterministic id, so whatever the killed worker had done but not
committed is simply done again. The result is compared record by record with
batch ingest of the same sessions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory
from streams import topics
from streams.broker import EmbeddedBroker
from streams.produce import StreamProducer, produce_sessions
from tests.integration.streams.diffs import differences, in_topic
from tests.integration.streams.harness import (
    ROOT,
    BackgroundProducer,
    WorkerProc,
    read_topic,
    snapshot,
    wait_until,
)

pytestmark = pytest.mark.integration

FILE = ROOT / "tests" / "fixtures" / "longmemeval_mini.json"


def test_sigkill_mid_stream_then_restart(broker: EmbeddedBroker, group: str, logs: Path,
                                         tmp_path: Path, batch_ingest: Callable[..., Any],
                                         ) -> None:
    parsed = read_file(FILE, tenant_id="t-kill")
    sessions = parsed.sessions
    messages = sum(len(t.messages) for s in sessions for t in s.turns)
    # Batch ingest of the same sessions, to compare with, runs while the worker streams.
    batched = batch_ingest(tmp_path / "batch", {"all": (FILE, "t-kill")})
    l0_before = len(read_topic(broker.address, topics.L0))
    worker = WorkerProc(broker.address, tmp_path / "stream", group, logs,
                        MEMSTRATA_STREAM_FRESHNESS_S="0.4").start()
    warm = read_file(ROOT / "examples" / "sample_turns.jsonl").sessions[:1]
    warm = [w.model_copy(update={"meta": w.meta.model_copy(update={"scope": w.scope.model_copy(
        update={"tenant_id": "t-kill-warm"})})}) for w in warm]

    async def warm_up() -> None:
        async with StreamProducer(broker.address) as p:
            await produce_sessions(p, warm, close=False)

    asyncio.run(warm_up())  # the worker has joined and loaded its encoder once this is indexed
    wait_until(lambda: len(read_topic(broker.address, topics.L0)) > l0_before, 90, 0.2)
    l0_before = len(read_topic(broker.address, topics.L0))
    # The producer holds after 60% of the messages until the worker is back, so the kill
    # lands mid-stream even on a slow, loaded machine.
    producer = BackgroundProducer(broker.address, sessions, rate=messages / 8,
                                  hold_at=int(messages * 0.6)).start()
    try:
        # Kill once the worker has indexed something, while the producer is still sending.
        wait_until(lambda: len(read_topic(broker.address, topics.L0)) > l0_before + 3, 90, 0.2)
        assert not producer.done.is_set(), "the stream ended before the kill: slow the producer down"
        worker.kill()
        worker.start()
        producer.resume.set()
        producer.join(120)
        assert producer.done.is_set() and not producer.errors, producer.errors
        worker.drain()
    finally:
        worker.stop()
        producer.join(5)
    assert worker.starts == 2
    expected = batched.result(300)["all"]
    with Memory.open(Settings(data_dir=tmp_path / "stream")) as stream:
        got = snapshot(stream, [s.scope for s in sessions])
    assert sum(len(v["sessions"]) for v in got.values()) == len(sessions)
    if got != expected:
        diff = differences(expected, got)
        raise AssertionError("\n".join(
            diff + in_topic(read_topic(broker.address, topics.TURNS), diff)))
