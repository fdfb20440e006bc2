"""Issue 31 (1) against ``memstrata serve``: its embedded broker lets in no process without
the per-start secret, and serve's own path (Ingest, worker, produce) still works.

Before: ``stream-broker.json`` (0644) named a tansu without authentication; a local
process with no key read every tenant's turns, injected a turn into tenant ``acme``
and published a ``delete_user`` on the control topic.
"""

from __future__ import annotations

import asyncio
import json
import stat
from typing import Any

import pytest

from memstrata.kafka import BROKER_FILE
from memstrata.kafka.security import kafka_client_kwargs
from streams import topics
from tests.e2e.test_serve_stream import Serve, _ingest, serve  # noqa: F401 - the fixture
from tests.integration.streams.harness import read_topic

pytestmark = pytest.mark.integration

TURN = {"session_id": "g1", "message_id": "g1-1", "role": "user",
        "content": "What is the name of my cat? It is Humbert, a grey tortoiseshell."}


async def _attempt(brokers: str) -> dict[str, Any]:
    """What a local process with the recorded address and no secret gets."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaError

    out: dict[str, Any] = {}
    consumer = AIOKafkaConsumer(topics.TURNS, bootstrap_servers=brokers, request_timeout_ms=5000,
                                auto_offset_reset="earliest")
    try:
        await consumer.start()
        got = await consumer.getmany(timeout_ms=3000)
        out["read"] = [m.value for b in got.values() for m in b]
    except KafkaError as exc:
        out["read"] = type(exc).__name__
    finally:
        await consumer.stop()
    for name, topic, value in (
            ("write", topics.TURNS, json.dumps({"tenant_id": "acme", "user_id": "guard",
                                                "session_id": "evil", "message_id": "e1",
                                                "role": "user", "content": "injected"})),
            ("delete", topics.CONTROL, json.dumps({"kind": "delete_user", "tenant_id": "acme",
                                                   "user_id": "guard"}))):
        producer = AIOKafkaProducer(bootstrap_servers=brokers, request_timeout_ms=5000)
        try:
            await producer.start()
            await producer.send_and_wait(topic, value.encode(), key=b"acme/guard/evil")
            out[name] = "accepted"
        except KafkaError as exc:
            out[name] = type(exc).__name__
        finally:
            await producer.stop()
    return out


def test_serves_broker_refuses_a_process_without_the_secret(serve: Serve) -> None:  # noqa: F811
    assert _ingest(serve, [TURN], "guard").accepted == 1
    info = json.loads((serve.data / BROKER_FILE).read_text())
    attempt = asyncio.run(_attempt(info["brokers"]))
    assert attempt == {"read": "KafkaConnectionError", "write": "KafkaConnectionError",
                       "delete": "KafkaConnectionError"}, attempt
    # The owner's login (what `memstrata produce` in another shell reads) still works,
    # and the topics hold only what serve put there.
    kafka = serve.kafka()
    assert kafka.security_protocol == "SASL_PLAINTEXT"
    turns = [json.loads(r.value) for r in read_topic(str(kafka.brokers), topics.TURNS,
                                                    kafka=kafka)]
    assert TURN["content"] in [t["content"] for t in turns]
    assert "injected" not in [t["content"] for t in turns]
    assert not [r for r in read_topic(str(kafka.brokers), topics.CONTROL, kafka=kafka)
                if b"guard" in r.value]
    assert kafka_client_kwargs(kafka)["sasl_mechanism"].startswith("SCRAM-")


def test_the_broker_file_and_the_secret_are_private(serve: Serve) -> None:  # noqa: F811
    path = serve.data / BROKER_FILE
    info = json.loads(path.read_text())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = serve.data / info["sasl"]["password_file"]
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
    password = secret.read_text().strip()
    assert len(password) >= 32
    # The password is in no file of the data dir that others could read.
    for f in serve.data.rglob("*"):
        if f.is_file() and f != secret and f.stat().st_mode & 0o044:
            assert password.encode() not in f.read_bytes(), f
    # Isolated where the kernel allows it (the test machines do).
    assert info["isolated"] is True
