"""Exact ``accepted`` and ``duplicates`` on every Ingest route, and an in-flight table that
empties (issue 31, items 4 and 10).

Before: on the Kafka route a replayed message id counted as ``accepted`` (and was
published again), and changed content under an old id was dropped by the worker
while the call reported it accepted; on the direct route changed content was
counted as a duplicate. ``PendingWrites`` kept every acknowledged id until its
user was deleted. Now each route reports what was new and what was a replay, an
id that comes back with other content refuses the request (nothing of it is
written or published), and the in-flight table holds only what is in flight.

The stream worker is a stand-in here (real worker tests live in tests/e2e): it
reads the turns topic of a real tansu broker and writes what it reads into the
real memory through the service's own direct-write path, then, for the embedded
route, notes the offsets as the real worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from memstrata.client import AsyncMemoryClient, MemoryClient, RemoteError, event
from memstrata.kafka import KafkaSettings
from memstrata.limits import TurnLimits
from memstrata.model import Scope
from memstrata.wire import TurnEvent
from query_service import writes
from query_service.keys import add_key
from query_service.publish import TURNS_TOPIC
from query_service.server import ServiceHandle, build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.integration.query_service.test_kafka import _create_topic, broker  # noqa: F401

pytestmark = pytest.mark.integration


def _ids(memory: Any, scope: Scope, session_id: str) -> list[str]:
    try:
        return [m.source_id for t in memory.raw(scope, session_id) for m in t.messages]
    except LookupError:
        return []


def test_direct_route_counts_replays_and_refuses_changed_content(service: Service):
    scope = Scope(tenant_id="acme", user_id="acct-direct")
    with MemoryClient(service.address, api_key=service.keys.acme) as c:
        first = c.ingest([event("acct-direct", "d1", "a", "user", "I keep bees."),
                          event("acct-direct", "d1", "b", "assistant", "Bees are great.")])
        assert (first.accepted, first.duplicates) == (2, 0)
        again = c.ingest([event("acct-direct", "d1", "a", "user", "I keep bees."),
                          event("acct-direct", "d1", "c", "user", "Three hives now."),
                          event("acct-direct", "d1", "c", "user", "Three hives now.")])
        assert (again.accepted, again.duplicates) == (1, 2)
        with pytest.raises(RemoteError) as changed:
            c.ingest([event("acct-direct", "d1", "x", "user", "A new message."),
                      event("acct-direct", "d1", "b", "assistant", "Bees are awful.")])
        with pytest.raises(RemoteError) as twice:
            c.ingest([event("acct-direct", "d2", "y", "user", "One text."),
                      event("acct-direct", "d2", "y", "user", "Another text.")])
    assert changed.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "events[1].content" in changed.value.details and "'b'" in changed.value.details
    assert "already stored" in changed.value.details
    assert twice.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "events[1].content" in twice.value.details and "earlier in this request" in str(
        twice.value)
    assert _ids(service.memory, scope, "d1") == ["a", "b", "c"]  # "x" refused with its request
    assert _ids(service.memory, scope, "d2") == []


async def _storing_worker(brokers: str, memory: Any, stop: asyncio.Event,
                          stored: Any = None) -> None:
    """Stand-in stream worker: store each record of the topic into ``memory``, note it."""
    from aiokafka import AIOKafkaConsumer

    from streams.records import Record

    loop = asyncio.get_running_loop()
    consumer = AIOKafkaConsumer(TURNS_TOPIC, bootstrap_servers=brokers,
                                auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    try:
        while not stop.is_set():
            got = await consumer.getmany(timeout_ms=50)
            for msgs in got.values():
                events = [TurnEvent.model_validate(json.loads(m.value)) for m in msgs]
                await loop.run_in_executor(None, writes.append_direct, memory, events)
                if stored is not None:
                    stored.note([Record(m.topic, m.partition, m.offset, m.key, m.value)
                                 for m in msgs], [])
    finally:
        await consumer.stop()


@contextlib.asynccontextmanager
async def _worker(brokers: str, memory: Any, stored: Any = None) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(_storing_worker(brokers, memory, stop, stored))
    try:
        yield
    finally:
        stop.set()
        await task


async def _published(brokers: str, key: str) -> list[str]:
    """The message ids of every record under ``key`` in the turns topic, read to its end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=brokers, group_id=None)
    await consumer.start()
    try:
        parts = [TopicPartition(TURNS_TOPIC, p)
                 for p in consumer.partitions_for_topic(TURNS_TOPIC) or {0}]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        out = []
        async with asyncio.timeout(20):
            while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
                for msgs in (await consumer.getmany(timeout_ms=200)).values():
                    out += [json.loads(m.value)["message_id"] for m in msgs
                            if m.key.decode() == key]
        return out
    finally:
        await consumer.stop()


async def _until(check: Any, timeout_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_kafka_route_counts_in_flight_and_stored_replays_exactly(
        service: Service, broker: str, tmp_path):  # noqa: F811
    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys, pending_sweep_s=0.05)
    scope = Scope(tenant_id="acme", user_id="acct-kafka")

    def ev(mid: str, text: str) -> Any:
        return event("acct-kafka", "k1", mid, "user", text)

    async def scenario() -> dict[str, Any]:
        await _create_topic(broker)
        handle: ServiceHandle = await build_server(
            service.memory, settings, kafka=KafkaSettings(brokers=broker),
            turn_limits=TurnLimits())
        out: dict[str, Any] = {}
        try:
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                # No worker yet: the first two are in flight when they come again.
                out["first"] = await c.ingest([ev("a", "Kayak on Sunday."), ev("b", "Rain.")])
                out["in_flight"] = await c.ingest([ev("a", "Kayak on Sunday."),
                                                   ev("b", "Rain.")])
                with pytest.raises(RemoteError) as changed:
                    await c.ingest([ev("c", "New."), ev("a", "Kayak on Monday.")])
                out["changed"] = changed.value
                out["pending_before"] = len(handle.servicer.pending)
                async with _worker(broker, service.memory):
                    await _until(lambda: "b" in _ids(service.memory, scope, "k1"))
                    out["stored"] = await c.ingest([ev("a", "Kayak on Sunday."),
                                                    ev("d", "Sun.")])
                    await _until(lambda: "d" in _ids(service.memory, scope, "k1"))
                    # The sweep drains the table with no further call.
                    await _until(lambda: len(handle.servicer.pending) == 0)
        finally:
            await handle.stop(0)
        out["published"] = await _published(broker, "acme/acct-kafka/")  # ADR 0005: user key
        return out

    out = asyncio.run(scenario())
    assert (out["first"].accepted, out["first"].duplicates) == (2, 0)
    assert (out["in_flight"].accepted, out["in_flight"].duplicates) == (0, 2)
    assert out["changed"].code == grpc.StatusCode.INVALID_ARGUMENT
    assert "events[1].content" in out["changed"].details
    assert out["pending_before"] == 2
    assert (out["stored"].accepted, out["stored"].duplicates) == (1, 1)
    assert sorted(out["published"]) == ["a", "b", "d"]  # no replay, nothing refused, sent
    assert _ids(service.memory, scope, "k1") == ["a", "b", "d"]


def test_embedded_route_counts_exactly_and_keeps_nothing_once_stored(service: Service,
                                                                     broker: str,  # noqa: F811
                                                                     tmp_path):
    """The embedded broker's route answers once the worker stored the turns: nothing of
    them stays in the in-flight table (before: every id, until the user was deleted)."""
    from streams.runtime import StoredTurns

    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys, ingest_wait_s=20)
    stored = StoredTurns()
    calls, per_call = 8, 25

    def batch(n: int) -> list[Any]:
        return [event("acct-embedded", f"e{n % 3}", f"m{n}-{i}", "user", f"Note {n}/{i}.")
                for i in range(per_call)]

    async def scenario() -> dict[str, Any]:
        await _create_topic(broker)
        handle = await build_server(service.memory, settings, stored=stored,
                                    kafka=KafkaSettings(brokers=broker),
                                    turn_limits=TurnLimits())
        out: dict[str, Any] = {"replies": []}
        try:
            async with _worker(broker, service.memory, stored), \
                    AsyncMemoryClient(handle.address, api_key=key) as c:
                for n in range(calls):
                    out["replies"].append(await c.ingest(batch(n)))
                out["pending"] = len(handle.servicer.pending)
                out["replay"] = await c.ingest(batch(0)[:5] + batch(calls)[:5])
                with pytest.raises(RemoteError) as changed:
                    await c.ingest([event("acct-embedded", "e0", "m0-0", "user", "Changed.")])
                out["changed"] = changed.value
                out["pending_after"] = len(handle.servicer.pending)
        finally:
            await handle.stop(0)
        return out

    out = asyncio.run(scenario())
    assert [(r.accepted, r.duplicates) for r in out["replies"]] == [(per_call, 0)] * calls
    assert out["pending"] == 0 and out["pending_after"] == 0
    assert (out["replay"].accepted, out["replay"].duplicates) == (5, 5)
    assert out["changed"].code == grpc.StatusCode.INVALID_ARGUMENT
    assert "events[0].content" in out["changed"].details
