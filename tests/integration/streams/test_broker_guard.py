"""The embedded broker is no way in: without the per-start secret, no read, write or delete.

Issue 31 (1): any local process read every tenant's turns from the embedded tansu,
wrote turns into a tenant and published ``delete_user`` on the control topic, with
no key. :class:`streams.broker.GuardedBroker` puts tansu in a network namespace of
its own behind a SCRAM gate; these tests play the local attacker against it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.kafka import KafkaSettings
from memstrata.kafka.security import kafka_client_kwargs
from streams import topics
from streams.broker import LOGIN_FILE, BrokerError, GuardedBroker
from streams.topics import specs
from tests.integration.streams.harness import read_topic

pytestmark = pytest.mark.integration

SECRET_TEXT = b"my cat is called Humbert"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuardedBroker]:
    b = GuardedBroker(log_dir=tmp_path_factory.mktemp("guarded"), isolation="namespace")
    try:
        b.start()
    except BrokerError as exc:
        if "cannot isolate" in str(exc):
            pytest.skip(f"this kernel refuses unprivileged network namespaces: {exc}")
        raise
    try:
        b.create_topics(specs(2))
        asyncio.run(_produce(b.address, kafka_client_kwargs(b.client_settings()),
                             topics.TURNS, SECRET_TEXT))
        yield b
    finally:
        b.stop()


async def _produce(brokers: str, auth: dict[str, Any], topic: str, value: bytes) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=brokers, request_timeout_ms=5000, **auth)
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, key=b"acme/u/s")
    finally:
        await producer.stop()


async def _consume(brokers: str, auth: dict[str, Any], topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=brokers, auto_offset_reset="earliest",
                                request_timeout_ms=5000, **auth)
    await consumer.start()
    try:
        got = await consumer.getmany(timeout_ms=3000)
        return [m.value for batch in got.values() for m in batch]
    finally:
        await consumer.stop()


def _bypass_scram(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client tansu's own --authentication lets in: it ignores the server's
    ``e=invalid-proof`` answer instead of hanging up."""
    from aiokafka.conn import ScramAuthenticator

    monkeypatch.setattr(ScramAuthenticator, "process_server_final_message",
                        lambda self, message: None)


ATTACKERS: dict[str, dict[str, Any]] = {
    "plaintext": {},
    "wrong password": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
                       "sasl_plain_username": "memstrata", "sasl_plain_password": "guess"},
    "plain mechanism": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                        "sasl_plain_username": "memstrata", "sasl_plain_password": "guess"},
}


@pytest.mark.parametrize("who", [*ATTACKERS, "ignores the refusal"])
def test_no_secret_can_neither_read_nor_write_nor_delete(
        guarded: GuardedBroker, who: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka.errors import KafkaError

    if who == "ignores the refusal":
        _bypass_scram(monkeypatch)
    auth = ATTACKERS.get(who, ATTACKERS["wrong password"])
    # Read every tenant's turns:
    with pytest.raises(KafkaError):
        asyncio.run(_consume(guarded.address, auth, topics.TURNS))
    # Write a turn into a tenant, and a delete_user on the control topic:
    for topic, value in ((topics.TURNS, b'{"tenant_id": "acme"}'),
                         (topics.CONTROL, b'{"kind": "delete_user", "tenant_id": "acme"}')):
        with pytest.raises(KafkaError):
            asyncio.run(_produce(guarded.address, auth, topic, value))
    # Nothing got in: the owner still reads one turn, and nothing on control.
    owner = guarded.client_settings()
    assert [r.value for r in read_topic(guarded.address, topics.TURNS, kafka=owner)] \
        == [SECRET_TEXT]
    assert read_topic(guarded.address, topics.CONTROL, kafka=owner) == []


def _request(api_key: int, version: int, body: bytes = b"") -> bytes:
    frame = struct.pack(">hhih", api_key, version, 1, 3) + b"cli" + body
    return struct.pack(">i", len(frame)) + frame


@pytest.mark.parametrize("api_key", [0, 1, 3, 21])  # Produce, Fetch, Metadata, DeleteRecords
def test_a_request_before_login_gets_no_answer(guarded: GuardedBroker, api_key: int) -> None:
    with socket.create_connection((guarded.host, guarded.port), timeout=5) as s:
        s.sendall(_request(api_key, 0, b"\x00" * 16))
        assert s.recv(4096) == b""  # the gate hung up without a byte


def test_tansu_listens_only_in_its_own_network_namespace(guarded: GuardedBroker) -> None:
    assert guarded.isolated is True and guarded.tansu_pid is not None
    ours = os.readlink("/proc/self/ns/net")
    assert os.readlink(f"/proc/{guarded.tansu_pid}/ns/net") != ours
    # The only listener in our namespace is the gate's: tansu's sockets are not in it.
    tansu_sockets = {os.readlink(f"/proc/{guarded.tansu_pid}/fd/{fd}")
                     for fd in os.listdir(f"/proc/{guarded.tansu_pid}/fd")}
    inodes = {line.split()[9] for name in ("tcp", "tcp6")
              for line in Path(f"/proc/self/net/{name}").read_text().splitlines()[1:]}
    assert not {s for s in tansu_sockets if s.startswith("socket:")} & \
        {f"socket:[{i}]" for i in inodes}


def test_the_secret_is_readable_by_its_owner_only(guarded: GuardedBroker) -> None:
    assert guarded.log_dir is not None
    secret = guarded.log_dir / LOGIN_FILE
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(guarded.log_dir.stat().st_mode) == 0o700
    assert secret.read_text() == guarded.login.password
    assert guarded.login.password not in repr(guarded.login)
    # The gate holds only the SCRAM verifier: the password is in none of its arguments.
    assert guarded.proc is not None
    assert guarded.login.password.encode() not in Path(
        f"/proc/{guarded.proc.pid}/cmdline").read_bytes()


def test_the_recorded_broker_gives_its_login_to_the_owners_commands(
        guarded: GuardedBroker, tmp_path: Path) -> None:
    from memstrata.kafka import BROKER_FILE, write_broker_file

    write_broker_file(tmp_path, guarded.address, login=guarded.login,
                      login_file=guarded.login_file, isolated=guarded.isolated)
    assert stat.S_IMODE((tmp_path / BROKER_FILE).stat().st_mode) == 0o600
    assert guarded.login.password not in (tmp_path / BROKER_FILE).read_text()
    kafka = KafkaSettings().resolve(tmp_path)
    assert kafka.security_protocol == "SASL_PLAINTEXT"
    assert asyncio.run(_consume(guarded.address, kafka_client_kwargs(kafka), topics.TURNS)) \
        == [SECRET_TEXT]


def test_isolation_none_still_gates_but_shares_the_host_network(tmp_path: Path) -> None:
    with GuardedBroker(log_dir=tmp_path, isolation="none") as b:
        assert b.isolated is False
        assert os.readlink(f"/proc/{b.tansu_pid}/ns/net") == os.readlink("/proc/self/ns/net")
        b.create_topics(specs(1))
        asyncio.run(_produce(b.address, kafka_client_kwargs(b.client_settings()),
                             topics.TURNS, b"x"))
    assert not (tmp_path / LOGIN_FILE).exists()  # removed with the broker


def test_the_rss_gauge_reports_the_brokers_memory(guarded: GuardedBroker) -> None:
    """``memstrata_stream_broker_rss_bytes``: this tansu keeps every record until it stops
    (issue 31 (3); bench/broker_memory.py measures it), so the gauge is how to watch it."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    guarded.register_metrics(registry)

    def gauge() -> float:
        for line in generate_latest(registry).decode().splitlines():
            if line.startswith("memstrata_stream_broker_rss_bytes "):
                return float(line.split()[1])
        raise AssertionError("no memstrata_stream_broker_rss_bytes")

    before = gauge()
    assert before > 1_000_000  # a live tansu, not the 0 of a stopped one

    async def flood() -> None:
        from aiokafka import AIOKafkaProducer

        p = AIOKafkaProducer(bootstrap_servers=guarded.address,
                             **kafka_client_kwargs(guarded.client_settings()))
        await p.start()
        try:
            futs = [await p.send(topics.L0, b"r" * 2000) for _ in range(3000)]
            await asyncio.gather(*futs)
        finally:
            await p.stop()

    asyncio.run(flood())
    assert gauge() > before + 3000 * 2000 * 0.8  # the 6 MB sent are held
