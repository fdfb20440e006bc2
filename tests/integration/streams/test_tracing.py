"""One produced turn is one connected trace: producer -> worker -> store writes -> L0 -> pre-warm.

Everything is real: ``memstrata produce`` and the stream worker are processes of
their own with tracing switched on by the standard OTEL_* variables, exporting
OTLP/HTTP to a receiver on loopback that decodes what it gets with
``opentelemetry-proto``; the worker's L0 notice is read by the pre-warm consumer
(``workers.prewarm.consume_l0``) in this process, exporting to the same receiver.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.broker import EmbeddedBroker
from tests.integration.streams.harness import ROOT, WorkerProc
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

pytest.importorskip("opentelemetry.sdk", reason="tracing needs the otel extra")
pytestmark = pytest.mark.integration

TURNS = "memstrata.turns.v1"
L0 = "memstrata.l0.v1"
#: The spans of one turn's trace, from the producer to the pre-warm.
EXPECTED = {f"{TURNS} send", f"process {TURNS}", "create_memory memstrata",
            "memstrata.store.flush", f"{L0} send", f"process {L0}", "memstrata.prewarm"}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.stop()


def otel_env(receiver: OtlpReceiver) -> dict[str, str]:
    return {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_BSP_SCHEDULE_DELAY": "100"}


class Warmed:
    """TEST DOUBLE: a warm function that records the sessions it was asked to warm."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []

    def __call__(self, scope, session_id: str) -> bool:
        self.keys.append((scope.user_id, session_id))
        return True


def _prewarm(broker: EmbeddedBroker, receiver: OtlpReceiver, warmed: Warmed,
             stop: threading.Event) -> threading.Thread:
    """consume_l0 in a thread of this process, its spans exported to the receiver."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from memstrata.telemetry import setup
    from workers.prewarm import Prewarmer, consume_l0
    from workers.settings import WorkersSettings

    provider = TracerProvider(resource=Resource({"service.name": "memstrata-prewarm"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint)))
    setup.install(provider, kafka=False)
    prewarmer = Prewarmer(WorkersSettings(prewarm="recent", prewarm_sessions_per_min=100_000),
                          warmed)
    thread = threading.Thread(target=lambda: asyncio.run(consume_l0(
        broker.address, prewarmer, group=None, stop=stop, offset_reset="earliest")), daemon=True)
    thread.start()
    return thread


def _connected(spans: list[ReceivedSpan], trace_id: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.trace_id == trace_id]


def test_one_turn_is_one_trace_from_the_producer_to_the_store_writes_and_prewarm(
        broker: EmbeddedBroker, group: str, logs: Path, tmp_path: Path,
        receiver: OtlpReceiver) -> None:
    from memstrata.telemetry import setup

    env = otel_env(receiver)
    worker = WorkerProc(broker.address, tmp_path / "data", group, logs, **env).start()
    turn = {"tenant_id": "acme", "user_id": "tracer", "session_id": "traced-1",
            "role": "user", "content": "My sister Ines and I booked Lisbon for May.",
            "message_id": "traced-1#1"}
    (tmp_path / "turn.jsonl").write_text(json.dumps(turn) + "\n")
    warmed, stop = Warmed(), threading.Event()
    prewarm = _prewarm(broker, receiver, warmed, stop)
    try:
        produced = subprocess.run(
            [sys.executable, "-m", "memstrata", "produce", str(tmp_path / "turn.jsonl"),
             "--brokers", broker.address, "--no-close"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env,
                 "MEMSTRATA_DATA_DIR": str(tmp_path / "producer")})
        assert produced.returncode == 0, produced.stderr

        def complete(spans: list[ReceivedSpan]) -> bool:
            """Every span expected is in (each process exports on its own schedule)."""
            sends = [s for s in spans if s.service == "memstrata-produce"
                     and s.name == f"{TURNS} send"]
            return bool(sends) and EXPECTED <= {
                s.name for s in _connected(spans, sends[0].trace_id)}

        spans = receiver.wait_for(complete, 90)
    finally:
        stop.set()
        prewarm.join(10)
        setup.shutdown()
        worker.stop()
    [send] = [s for s in spans if s.service == "memstrata-produce" and s.name == f"{TURNS} send"]
    trace = _connected(spans, send.trace_id)
    by_id = {s.span_id: s for s in trace}

    def one(name: str, service: str) -> ReceivedSpan:
        [found] = [s for s in trace if s.name == name and s.service == service]
        return found

    worker_svc = "memstrata-stream-worker"
    process = one(f"process {TURNS}", worker_svc)
    create = one("create_memory memstrata", worker_svc)
    flush = one("memstrata.store.flush", worker_svc)
    notice = one(f"{L0} send", worker_svc)
    received = one(f"process {L0}", "memstrata-prewarm")
    warm = one("memstrata.prewarm", "memstrata-prewarm")
    # Producer -> worker batch -> the store writes and the L0 notice -> pre-warm.
    assert send.parent_span_id == ""
    assert process.parent_span_id == send.span_id
    assert create.parent_span_id == flush.parent_span_id == notice.parent_span_id \
        == process.span_id
    assert received.parent_span_id == notice.span_id and warm.parent_span_id == received.span_id
    # Connected: every span of the trace but the producer's has its parent in it.
    assert [s.name for s in trace if s.parent_span_id and s.parent_span_id not in by_id] == []
    assert create.attributes["gen_ai.operation.name"] == "create_memory"
    assert create.attributes["memstrata.tenant_id"] == "acme"
    assert create.attributes["memstrata.messages"] == 1
    assert process.attributes["messaging.destination.name"] == TURNS
    assert warm.attributes["memstrata.tenant_id"] == "acme"
    assert ("tracer", "traced-1") in warmed.keys
    # No text of the turn on any span (the content switch is off).
    assert not [s.name for s in trace if any("Lisbon" in str(v) for v in s.attributes.values())]
