"""``memstrata serve`` hosting the stream worker (the embedded default), as a real subprocess.

One serve for the module: its /metrics carries the worker's series beside the
service's, an IngestBatch racing a DeleteUser through Kafka lands wholly
before or wholly after the delete, and the same turn events stored directly,
through Ingest and through ``memstrata produce`` end up identical (issue 17).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata.limits import TurnLimits, TurnRefused, validate_turn
from memstrata.model import Scope
from query_service.keys import add_key
from streams.broker import free_port
from tests.e2e.test_cli_serve import _wait_serving
from tests.support.atomic_batches import broken, race
from tests.support.serve_proc import stop_gracefully

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

#: Small stream batches, so one IngestBatch is stored in several pieces; fast commits.
FAST = {"MEMSTRATA_STREAM_BATCH_MAX": "2", "MEMSTRATA_STREAM_FRESHNESS_S": "0.5",
        "MEMSTRATA_KAFKA_COMMIT_INTERVAL_S": "0.2", "MEMSTRATA_KAFKA_SESSION_TIMEOUT_S": "6",
        "MEMSTRATA_KAFKA_HEARTBEAT_S": "0.5"}


@dataclass
class Serve:
    address: str
    metrics_url: str
    key: str
    data: Path
    proc: subprocess.Popen[str]

    def drained(self) -> None:
        from streams.worker import wait_drained

        kafka = self.kafka()
        assert asyncio.run(wait_drained(str(kafka.brokers), "memstrata-stream", 90,
                                        kafka=kafka)), "worker not drained"

    def kafka(self) -> Any:
        """Settings that reach serve's embedded broker: its address and per-start login."""
        from memstrata.kafka import KafkaSettings

        return KafkaSettings().resolve(self.data)


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    tmp = tmp_path_factory.mktemp("serve-stream")
    data = tmp / "data"
    data.mkdir()
    _, key = add_key(data / "service-keys.json", "acme")
    port, metrics_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env.update(FAST, MEMSTRATA_DATA_DIR=str(data), PYTHONPATH=str(ROOT))
    log = (tmp / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port),
                             "--metrics-port", str(metrics_port)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_serving(f"127.0.0.1:{port}", proc, timeout=120)
        yield Serve(f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics", key, data,
                    proc)
    finally:
        stop_gracefully(proc, 60)
        log.close()


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return str(reply.read().decode())


def _value(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + " ") or line.startswith(name + "{"))


def test_batches_are_atomic_with_respect_to_deletes_through_kafka(serve: Serve):
    outcome, present = race(serve.address, serve.key, "atom", batches=8,
                            settle=serve.drained)
    assert not outcome.errors, outcome.errors[:5]
    assert len(outcome.acked) == 9 and outcome.deletes > 0
    assert not broken(present), f"batches split by a delete (messages left of 6): " \
                                f"{broken(present)}"
    # Both outcomes happened: the race really raced.
    assert any(n == 6 for n in present.values()) and any(n == 0 for n in present.values()), \
        present


def test_stream_metrics_are_on_serves_metrics_port(serve: Serve):
    outcome, _ = race(serve.address, serve.key, "metered", batches=1, settle=serve.drained)
    assert len(outcome.acked) == 2
    text = _scrape(serve.metrics_url)
    assert "# TYPE memstrata_stream_dlq_events_total counter" in text
    assert _value(text, "memstrata_stream_turns_indexed_total") >= 6
    assert _value(text, "memstrata_stream_events_in_total") >= 12
    assert "memstrata_rpc_latency_seconds_bucket" in text  # the service's own, same port


# -- issue 17, item 1: one turn-event contract on every route -------------------------------
#
# The same events go (1) straight into a Memory, (2) through this serve's Ingest over
# gRPC (published to its embedded broker, stored by its worker) and (3) through
# `memstrata produce` (a JSONL file onto the turns topic, stored by the same worker).
# A late batch carries no date and (on the direct and Ingest routes) no labels, and
# messages sit exactly at each limit and one over. What is stored must be identical.

TURN_LIMITS = TurnLimits()  # the defaults serve runs with
AT_LIMIT = ("Our garden plan: tomatoes, basil and a small lemon tree by the wall. "
            * 400)[:TURN_LIMITS.max_content_chars]
SPEAKER_AT_LIMIT = "S" * TURN_LIMITS.max_speaker_chars
DATE = "2024-03-02T10:00:00"


def _batches() -> list[list[dict[str, Any]]]:
    """Two batches of session c1 (the late one without date or labels) and an over-limit one."""
    first = [
        {"session_id": "c1", "message_id": "c1-1", "role": "user",
         "content": "We moved to Porto in March; the flat looks over the river."},
        {"session_id": "c1", "message_id": "c1-2", "role": "assistant",
         "content": "Porto in spring sounds lovely. Any plans for the balcony?"},
        {"session_id": "c1", "message_id": "c1-3", "role": "user", "content": AT_LIMIT,
         "speaker": SPEAKER_AT_LIMIT},
        {"session_id": "c1", "message_id": "c1-4", "role": "assistant",
         "content": "A lemon tree needs sun most of the day."}]
    for ev in first:
        ev.update(session_date=DATE, labels={"source": "jsonl"})
    late = [
        {"session_id": "c1", "message_id": "c1-5", "role": "user",
         "content": "We also adopted a grey cat called Miso last week."},
        {"session_id": "c1", "message_id": "c1-6", "role": "assistant",
         "content": "Miso is a lovely name for a cat."}]
    return [first, late]


#: Labels at both label limits (JSONL carries none, so this one goes direct and by Ingest).
LABELS_AT_LIMIT = {"session_id": "c-labels", "message_id": "lab-1", "role": "user",
                   "content": "Labels at the limit ride along with this message.",
                   "session_date": DATE,
                   "labels": {f"{i:03d}".ljust(TURN_LIMITS.max_label_chars, "k"):
                              "v" * TURN_LIMITS.max_label_chars
                              for i in range(TURN_LIMITS.max_labels)}}
#: One over each other limit: (event, the refusal's text after "event.").
OVER_OTHERS = [
    ({**LABELS_AT_LIMIT, "speaker": "S" * (TURN_LIMITS.max_speaker_chars + 1)},
     "speaker: 129 characters, limit is 128 (MEMSTRATA_TURN_MAX_SPEAKER_CHARS)"),
    ({**LABELS_AT_LIMIT, "labels": {**LABELS_AT_LIMIT["labels"], "one-more": "v"}},
     "labels: 17 labels, limit is 16 (MEMSTRATA_TURN_MAX_LABELS)"),
    ({**LABELS_AT_LIMIT, "labels": {"k": "v" * (TURN_LIMITS.max_label_chars + 1)}},
     "labels['k'] value: 129 characters, limit is 128 (MEMSTRATA_TURN_MAX_LABEL_CHARS)")]
OVER = {"session_id": "c-over", "message_id": "over-1", "role": "user",
        "content": "x" * (TURN_LIMITS.max_content_chars + 1)}
OVER_TEXT = (f"content: {TURN_LIMITS.max_content_chars + 1} characters, limit is "
             f"{TURN_LIMITS.max_content_chars} (MEMSTRATA_TURN_MAX_CONTENT_CHARS)")


def _pb(ev: dict[str, Any], user: str) -> Any:
    from memstrata.rpc import memory_pb2 as pb

    return pb.TurnEvent(user_id=user, **{k: v for k, v in ev.items() if k != "labels"},
                        labels=ev.get("labels", {}))


def _jsonl(path: Path, events: list[dict[str, Any]], user: str) -> Path:
    lines = [json.dumps({"tenant_id": "acme", "user_id": user,
                         **{k: v for k, v in ev.items() if k != "labels"}}) for ev in events]
    path.write_text("\n".join(lines) + "\n")
    return path


def _stored(reader: Any, scope: Scope) -> dict[str, Any]:
    """Session metadata, raw turns and L0 units, without what names the user."""
    out = {}
    for meta in sorted(reader.sessions(scope), key=lambda m: m.session_id):
        sid = meta.session_id
        out[sid] = {
            "date": meta.session_date.isoformat() if meta.session_date else None,
            "labels": dict(meta.labels),
            "turns": [t.model_dump(mode="json") for t in reader.raw(scope, sid)],
            "units": [u.model_dump(mode="json", exclude={"id", "scope", "fallback"})
                      for u in reader.l0(scope, sid)]}
    return out


def _dead_letters(serve: Serve) -> list[Any]:
    from streams.events import DeadLetter
    from streams.topics import DLQ
    from tests.integration.streams.harness import read_topic

    kafka = serve.kafka()
    return [DeadLetter.model_validate_json(r.value)
            for r in read_topic(str(kafka.brokers), DLQ, kafka=kafka)]


def _ingest(serve: Serve, events: list[dict[str, Any]], user: str) -> Any:
    """``Ingest`` (one event) or ``IngestBatch`` over real gRPC; raises grpc.RpcError."""
    import grpc

    from memstrata.rpc import memory_pb2 as pb
    from memstrata.rpc import memory_pb2_grpc as pb_grpc

    with grpc.insecure_channel(serve.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        md = (("x-api-key", serve.key),)
        if len(events) == 1:
            return stub.Ingest(pb.IngestRequest(event=_pb(events[0], user)), metadata=md,
                               timeout=60)
        return stub.IngestBatch(pb.IngestBatchRequest(events=[_pb(e, user) for e in events]),
                                metadata=md, timeout=60)


def _refused(serve: Serve, ev: dict[str, Any], user: str) -> str:
    import grpc

    with pytest.raises(grpc.RpcError) as info:
        _ingest(serve, [ev], user)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value
    return str(info.value.details())


def test_a_message_ingest_accepts_is_one_the_worker_stores(serve: Serve):
    """Bug 1: 30,000 characters were acknowledged by Ingest, then dead-lettered."""
    from memstrata.client.sync import MemoryClient

    big = {"session_id": "big", "message_id": "big-1", "role": "user", "content": "y" * 30_000}
    why = _refused(serve, big, "repro1")
    assert why == ("event.content: 30000 characters, limit is 20000 "
                   "(MEMSTRATA_TURN_MAX_CONTENT_CHARS)")
    _ingest(serve, [{**big, "content": "y" * 20_000}], "repro1")  # at the limit: stored
    with MemoryClient(serve.address, api_key=serve.key) as client:
        scope = Scope(tenant_id="acme", user_id="repro1")
        assert [len(m.content) for t in client.raw(scope, "big") for m in t.messages] == [20_000]
    # Refused before it was published: nothing of this user is in the dead-letter topic.
    assert not [d for d in _dead_letters(serve) if d.key_b64 and
                base64.b64decode(d.key_b64).startswith(b"acme/repro1/")]


def test_direct_ingest_and_produce_store_the_same(serve: Serve, tmp_path: Path,
                                                 embedder: Any):
    from memstrata.client.sync import MemoryClient
    from memstrata.config import Settings
    from memstrata.llm.extractive import ExtractiveBuilder
    from memstrata.memory import Memory
    from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

    batches = _batches()
    # 1. Directly into a Memory: each batch as it comes, meta from its first event.
    settings = Settings(data_dir=tmp_path / "direct")
    direct = Memory(settings, ExtractiveBuilder(), embedder,
                    open_vector_store(settings, embedder.dim), open_lexical_store(settings),
                    open_doc_store(settings))
    try:
        for batch in batches:
            events = [validate_turn({"tenant_id": "acme", "user_id": "direct", "ts": DATE,
                                     **ev}, TURN_LIMITS) for ev in batch]
            direct.append_messages(events[0].meta(), [e.message() for e in events])
        ev = validate_turn({"tenant_id": "acme", "user_id": "direct", "ts": DATE,
                            **LABELS_AT_LIMIT}, TURN_LIMITS)
        direct.append_messages(ev.meta(), [ev.message()])
        for bad, text in [(OVER, OVER_TEXT), *OVER_OTHERS]:
            with pytest.raises(TurnRefused) as info:
                validate_turn({"tenant_id": "acme", "user_id": "direct", "ts": DATE, **bad},
                              TURN_LIMITS)
            assert info.value.reason == "too_large" and str(info.value) == f"event.{text}"
        want = _stored(direct, Scope(tenant_id="acme", user_id="direct"))
    finally:
        direct.close()
    assert want["c1"]["date"] == DATE and want["c1"]["labels"] == {"source": "jsonl"}
    assert len(want["c1"]["turns"]) == 3 and len(want["c1"]["units"]) == 3
    assert want["c-labels"]["labels"] == LABELS_AT_LIMIT["labels"]

    with MemoryClient(serve.address, api_key=serve.key) as client:
        # 2. Through serve's Ingest: one IngestBatch per batch; the one over is refused.
        for batch in [*batches, [LABELS_AT_LIMIT]]:
            assert _ingest(serve, batch, "ingest").accepted == len(batch)
        for bad, text in [(OVER, OVER_TEXT), *OVER_OTHERS]:
            assert _refused(serve, bad, "ingest") == f"event.{text}"
        # 3. Through `memstrata produce`: one file per batch (JSONL carries no labels: the
        # reader labels its sessions {"source": "jsonl"}, which the others send too).
        kafka = serve.kafka()
        files = [_jsonl(tmp_path / f"batch{i}.jsonl", batch, "produce")
                 for i, batch in enumerate([*batches[:1], [*batches[1], OVER]])]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
        # The embedded broker lets in only its per-start login (given here as settings).
        env.update(MEMSTRATA_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
                   MEMSTRATA_KAFKA_SASL_MECHANISM=kafka.sasl_mechanism,
                   MEMSTRATA_KAFKA_SASL_USERNAME=kafka.sasl_username,
                   MEMSTRATA_KAFKA_SASL_PASSWORD=kafka.sasl_password.get_secret_value())
        for f in files:
            done = subprocess.run(
                [sys.executable, "-m", "memstrata", "produce", str(f), "--brokers", kafka.brokers,
                 "--no-close", "--data-dir", str(tmp_path)], cwd=ROOT, capture_output=True,
                text=True, timeout=120, env={**env, "PYTHONPATH": str(ROOT)})
            assert done.returncode == 0, done.stderr
            serve.drained()
        # Ingest answered once its turns were stored; the produced ones are waited for.
        from_files = {sid: v for sid, v in want.items() if sid != "c-labels"}
        got = {user: _settled(lambda u=user: _stored(client, Scope(tenant_id="acme", user_id=u)),
                              expected) for user, expected in (("ingest", want),
                                                               ("produce", from_files))}
    assert got["ingest"] == want
    assert got["produce"] == from_files
    # The message over the limit: refused by Ingest, dead-lettered from the topic (under its
    # user's key, ADR 0005), with the same reason text; stored nowhere.
    over = [("too_large", f"event.{OVER_TEXT}")]
    letters = _settled(lambda: [(d.reason, d.detail) for d in _dead_letters(serve) if d.key_b64
                                and base64.b64decode(d.key_b64) == b"acme/produce/"],
                       over)
    assert letters == over


def _settled(read: Callable[[], Any], want: Any, timeout_s: float = 60) -> Any:
    """``read()`` once it returns ``want`` (or its last answer after ``timeout_s``).

    The stream group's committed offsets can run ahead of the stores (query_service
    .writes), so a drained group is not yet proof; the stores are asked instead.
    """
    deadline = time.monotonic() + timeout_s
    while (got := read()) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    return got
