"""Pre-warming from L0 reports: ``recent`` has L1 cached before the first read, ``off``
builds nothing, ``hot`` waits for a session in full flow, and the budget holds the rate."""

from __future__ import annotations

import json
from typing import Any

from memstrata.config import Settings
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from workers.metrics import WorkersMetrics
from workers.prewarm import Prewarmer, memory_warmer
from workers.settings import WorkersSettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _fresh(tmp_path: Any, dataset: Any, embedder: Any) -> Memory:
    s = Settings(data_dir=tmp_path)
    m = Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
               open_lexical_store(s), open_doc_store(s))
    m.ingest(dataset.parsed.sessions)
    return m


def _reports(dataset: Any) -> list[bytes]:
    return [json.dumps({"v": 1, "tenant_id": s.meta.scope.tenant_id,
                        "user_id": s.meta.scope.user_id, "session_id": s.meta.session_id,
                        "unit_ids": [], "turns": [1], "cause": "append",
                        "ts": "2026-01-01T00:00:00Z"}).encode()
            for s in dataset.parsed.sessions]


def _cached(memory: Memory, dataset: Any) -> int:
    v = memory.builder.version
    return sum(memory.docs.get_layer(s.meta.scope, s.meta.session_id, "L1", v) is not None
               for s in dataset.parsed.sessions)


def test_recent_warms_before_first_read_and_off_builds_nothing(tmp_path, dataset, embedder):
    memory = _fresh(tmp_path, dataset, embedder)
    try:
        reports = _reports(dataset)
        off = Prewarmer(WorkersSettings(prewarm="off"), memory_warmer(memory))
        assert not any(off.offer_record(r) for r in reports)
        assert off.drain() == 0 and _cached(memory, dataset) == 0 and memory.layers.builds == 0

        metrics = WorkersMetrics()
        recent = Prewarmer(WorkersSettings(prewarm="recent", prewarm_sessions_per_min=1000),
                           memory_warmer(memory), metrics=metrics)
        assert all(recent.offer_record(r) for r in reports)
        assert recent.offer_record(b"{not json") is False
        assert recent.drain() == len(reports) == _cached(memory, dataset)
        first = dataset.parsed.sessions[0].meta
        _, hit = memory.layers.facts(first.scope, first.session_id)
        assert hit  # the first read found L1 ready
        assert metrics.prewarm_sessions.labels(outcome="built")._value.get() == len(reports)
    finally:
        memory.close()


def test_budget_holds_the_stated_rate_and_hot_waits(tmp_path, dataset):
    clock, warmed = Clock(), []
    p = Prewarmer(WorkersSettings(prewarm="recent", prewarm_sessions_per_min=2),
                  lambda scope, sid: warmed.append(sid) or True, clock=clock)
    for i in range(5):
        p.offer("t", "u", f"s{i}")
    assert p.drain() == 2  # a minute's allowance at once, the rest skipped
    assert p.metrics.prewarm_sessions.labels(outcome="skipped_budget")._value.get() == 3
    for minute in range(1, 4):
        clock.now += 60
        for i in range(5):
            p.offer("t", "u", f"m{minute}-{i}")
        assert p.drain() == 2
    assert len(warmed) == 8  # 2 per minute over four minutes

    spent = [0.0]

    def costly(scope: Any, sid: str) -> bool:
        spent[0] += 0.4
        return True

    usd = Prewarmer(WorkersSettings(prewarm="recent", prewarm_usd_per_hour=1.0,
                                    prewarm_sessions_per_min=1000), costly,
                    spend=lambda: spent[0], clock=clock)
    for i in range(6):
        usd.offer("t", "u", f"c{i}")
    assert usd.drain() == 3  # 0.4 + 0.4 < 1.0 allows a third, then the hour is spent
    assert abs(usd.metrics.prewarm_spend._value.get() - 1.2) < 1e-9

    hot = Prewarmer(WorkersSettings(prewarm="hot", prewarm_hot_events=3,
                                    prewarm_window_s=60), lambda s, i: True, clock=clock)
    assert [hot.offer("t", "u", "a") for _ in range(3)] == [False, False, True]
    clock.now += 100
    assert hot.offer("t", "u", "b") is False
    clock.now += 100  # the earlier report fell out of the window
    assert [hot.offer("t", "u", "b") for _ in range(2)] == [False, False]


def test_prewarm_consumes_the_l0_topic_from_a_real_broker(tmp_path, dataset, embedder):
    """The stream worker's topic, through a real (tansu) broker, into warm L1 caches."""
    import asyncio
    import threading
    import time

    from aiokafka import AIOKafkaProducer

    from streams.broker import EmbeddedBroker
    from streams.topics import L0, TopicSpec
    from workers.prewarm import L0_TOPIC, consume_l0

    assert L0 == L0_TOPIC  # the workers' copy of the topic name is the stream worker's
    memory = _fresh(tmp_path / "data", dataset, embedder)
    broker = EmbeddedBroker(log_dir=tmp_path / "tansu")
    stop = threading.Event()
    try:
        broker.start()
        broker.create_topics([TopicSpec(L0, 1)])
        pre = Prewarmer(WorkersSettings(prewarm="recent", prewarm_sessions_per_min=1000),
                        memory_warmer(memory))
        consumer = threading.Thread(target=lambda: asyncio.run(consume_l0(
            broker.address, pre, group=None, stop=stop, offset_reset="earliest")))
        consumer.start()

        async def produce() -> None:
            producer = AIOKafkaProducer(bootstrap_servers=broker.address)
            await producer.start()
            try:
                for r in _reports(dataset):
                    await producer.send_and_wait(L0, r)
            finally:
                await producer.stop()

        asyncio.run(produce())
        deadline = time.monotonic() + 60
        while _cached(memory, dataset) < len(dataset.parsed.sessions) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _cached(memory, dataset) == len(dataset.parsed.sessions)
        stop.set()
        consumer.join(30)
        assert not consumer.is_alive()
    finally:
        stop.set()
        broker.stop()
        memory.close()
