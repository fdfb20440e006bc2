"""Kafka mode (Ingest acknowledged at the broker): closes and deletes go through
``memstrata.control.v1`` and are answered once the stream worker applied them.

A real ``memstrata serve`` with ``MEMSTRATA_SERVICE_INGEST_ACK=broker`` (its tansu
broker, its Faust worker, real gRPC): turns are ingested, one more is produced
straight to the turns topic just before a DeleteUser, and after the reply nothing
of the user is found, now or once the worker has drained the topics (the late
turn is not brought back); the stores themselves are read after serve stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.model import Scope
from memstrata.wire import CONTROL_TOPIC
from query_service.keys import add_key
from streams.broker import free_port
from memstrata.kafka import BROKER_FILE
from tests.support.serve_proc import stop_gracefully, wait_serving
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

ENV = {"MEMSTRATA_SERVICE_INGEST_ACK": "broker", "MEMSTRATA_STREAM_FRESHNESS_S": "0.5",
       "MEMSTRATA_KAFKA_COMMIT_INTERVAL_S": "0.2", "MEMSTRATA_KAFKA_SESSION_TIMEOUT_S": "6",
       "MEMSTRATA_KAFKA_HEARTBEAT_S": "0.5"}
MIA = Scope(tenant_id="acme", user_id="mia")


@dataclass
class Serve:
    address: str
    key: str
    data: Path
    proc: subprocess.Popen[str]

    @property
    def brokers(self) -> str:
        return str(json.loads((self.data / BROKER_FILE).read_text())["brokers"])

    @property
    def kafka(self) -> Any:
        """Settings that reach serve's embedded broker: its address and per-start login."""
        from memstrata.kafka import KafkaSettings

        return KafkaSettings().resolve(self.data)


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    tmp = tmp_path_factory.mktemp("serve-kafka")
    data = tmp / "data"
    data.mkdir()
    _, key = add_key(data / "service-keys.json", "acme")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env.update(ENV, MEMSTRATA_DATA_DIR=str(data), PYTHONPATH=str(ROOT))
    log_path = tmp / "serve.log"
    log = log_path.open("w")
    proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        wait_serving(f"127.0.0.1:{port}", 120, lambda: None if proc.poll() is None else
                     f"serve exited with {proc.returncode}: {log_path.read_text()[-2000:]}",
                     step_s=0.2)
        yield Serve(f"127.0.0.1:{port}", key, data, proc)
    finally:
        stop_gracefully(proc, 60)
        log.close()


def _event(user: str, sid: str, mid: str, role: str, text: str) -> pb.TurnEvent:
    return pb.TurnEvent(user_id=user, session_id=sid, message_id=mid, role=role, content=text)


def _sessions(stub: pb_grpc.MemoryServiceStub, meta: tuple, user: str) -> list[str]:
    try:
        reply = stub.ListSessions(pb.ListSessionsRequest(user_id=user), metadata=meta)
    except grpc.RpcError as exc:
        if exc.code() != grpc.StatusCode.NOT_FOUND:
            raise
        return []
    return sorted(s.session_id for s in reply.sessions)


def _produce_late_turn(brokers: str, kafka: Any) -> None:
    """A turn for Mia sent straight to the turns topic (another producer), not yet stored."""
    from memstrata.wire import TurnEvent
    from streams.events import utcnow
    from streams.produce import StreamProducer

    async def go() -> None:
        async with StreamProducer(brokers, kafka=kafka) as producer:
            fut = await producer.send_turn(TurnEvent(
                tenant_id="acme", user_id="mia", session_id="m3", message_id="m3-u",
                role="user", content="Late news: I adopted a grey cat called Pixel.",
                ts=utcnow()))
            await fut

    asyncio.run(go())


def test_delete_user_goes_through_the_control_topic_and_nothing_comes_back(serve: Serve):
    meta = (("x-api-key", serve.key),)
    with grpc.insecure_channel(serve.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        reply = stub.IngestBatch(pb.IngestBatchRequest(events=[
            _event("mia", "m1", "m1-u1", "user", "I started learning the cello in March."),
            _event("mia", "m1", "m1-a1", "assistant", "The cello suits patient learners."),
            _event("mia", "m1", "m1-u2", "user", "My teacher is called Ines."),
            _event("mia", "m2", "m2-u1", "user", "We booked a trip to Lisbon for June.")]),
            metadata=meta, timeout=60)
        assert reply.route == "kafka" and reply.durability == pb.DURABILITY_BROKER
        wait_for(lambda: _sessions(stub, meta, "mia") == ["m1", "m2"], 60,
                 "the worker stores Mia's two sessions")

        _produce_late_turn(serve.brokers, serve.kafka)  # before the delete, still in the topic
        deleted = stub.DeleteUser(pb.UserRequest(user_id="mia"), metadata=meta, timeout=60)

        # The reply came once the worker applied the delete: nothing is found now ...
        removed = {c.store: c.removed for c in deleted.removed}
        assert deleted.complete and removed["docs"] >= 3, removed  # m1: 2 turns, m2: 1
        assert _sessions(stub, meta, "mia") == []
        with pytest.raises(grpc.RpcError) as search:
            stub.Search(pb.SearchRequest(user_id="mia", queries=["cello teacher"]),
                        metadata=meta)
        assert search.value.code() == grpc.StatusCode.NOT_FOUND

        # ... nor once every event on the topics is applied: the late turn, produced
        # before the delete, is not resurrected after it.
        from streams.worker import wait_drained

        assert asyncio.run(wait_drained(serve.brokers, "memstrata-stream", 60,
                                            kafka=serve.kafka)), "not drained"
        assert _sessions(stub, meta, "mia") == []
        from tests.integration.streams.harness import read_topic

        controls = [json.loads(r.value) for r in read_topic(serve.brokers, CONTROL_TOPIC,
                                                                kafka=serve.kafka)]
        (sent,) = [c for c in controls if c["type"] == "delete_user" and c["user_id"] == "mia"]
        assert sum(sent["after"].values()) >= 5  # it follows the four ingested turns and m3

        # A turn sent after the delete is new data.
        stub.IngestBatch(pb.IngestBatchRequest(events=[
            _event("mia", "m4", "m4-u1", "user", "Starting over: I now paint watercolours.")]),
            metadata=meta, timeout=60)
        wait_for(lambda: _sessions(stub, meta, "mia") == ["m4"], 60,
                 "the turn after the delete is stored")

        # CloseSession takes the same route; its reply counts the units the worker's close
        # notices name (none here: the offline builder's last window is already final, as
        # the direct route reports too), and the session stays.
        closed = stub.CloseSession(pb.SessionRequest(user_id="mia", session_id="m4"),
                                   metadata=meta, timeout=60)
        assert closed.units_written == 0
        assert _sessions(stub, meta, "mia") == ["m4"]
        with pytest.raises(grpc.RpcError) as unknown:
            stub.DeleteSession(pb.SessionRequest(user_id="mia", session_id="nope"),
                               metadata=meta, timeout=60)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

    # Every store, read directly once serve has let go of the data dir.
    stop_gracefully(serve.proc, 60)
    from memstrata.config import Settings
    from memstrata.memory import Memory

    with Memory.open(Settings(data_dir=serve.data)) as memory:
        assert [m.session_id for m in memory.sessions(MIA)] == ["m4"]
        assert (memory.vectors.count(MIA), memory.lexical.count(MIA),
                memory.docs.count_turns(MIA)) == (1, 1, 1)
