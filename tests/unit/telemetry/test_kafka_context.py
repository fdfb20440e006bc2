"""Trace context in Kafka record headers: a batch continues its producers' traces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="tracing needs the otel extra")

from opentelemetry import propagate, trace

from memstrata.telemetry import kafka, tracer
from memstrata.telemetry.writer import traced_writer
from tests.unit.telemetry.conftest import Spans


@dataclass
class Message:
    headers: Any = field(default_factory=list)


@dataclass
class Event:
    """TEST DOUBLE: a Faust event's shape as the batch span reads it (``message.headers``)."""

    message: Message


def _produced(name: str) -> tuple[Any, list[tuple[str, bytes]]]:
    """A producer span, and record headers carrying it (as the aiokafka setter writes them)."""
    span = tracer().start_span(name, kind=trace.SpanKind.PRODUCER)
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    span.end()
    return span, [(k, v.encode()) for k, v in carrier.items()]


def test_a_batch_span_continues_the_first_trace_and_links_the_others(spans: Spans) -> None:
    first, h1 = _produced("send a")
    second, h2 = _produced("send b")
    events = [Event(Message(h1)), Event(Message(h1)), Event(Message()), Event(Message(h2))]
    with kafka.batch_span("memstrata.turns.v1", events, group="g") as batch:
        with tracer().start_as_current_span("create_memory memstrata"):
            pass
    [store] = spans.named("create_memory memstrata")
    processes = spans.named("process memstrata.turns.v1")
    main = next(s for s in processes if s.context.span_id == batch.get_span_context().span_id)
    assert main.parent.span_id == first.get_span_context().span_id
    assert main.context.trace_id == first.get_span_context().trace_id
    assert store.parent.span_id == main.context.span_id  # the writes nest under the batch
    assert [ln.context.span_id for ln in main.links] == [second.get_span_context().span_id]
    assert main.attributes["messaging.batch.message_count"] == 4
    assert main.attributes["messaging.consumer.group.name"] == "g"
    assert main.kind == trace.SpanKind.CONSUMER
    # The second producer's trace gets a process span of its own, linked to the batch.
    [companion] = [s for s in processes if s is not main]
    assert companion.parent.span_id == second.get_span_context().span_id
    assert [ln.context.span_id for ln in companion.links] == [main.context.span_id]


def test_a_record_span_is_the_child_of_its_producer_and_reads_mapping_headers(
        spans: Spans) -> None:
    producer, headers = _produced("send l0")
    with kafka.record_span("memstrata.l0.v1", dict(headers)) as span:
        later = kafka.span_context(span)
    with kafka.child_span("memstrata.prewarm", later):
        pass
    [process] = spans.named("process memstrata.l0.v1")
    [warm] = spans.named("memstrata.prewarm")
    assert process.parent.span_id == producer.get_span_context().span_id
    assert warm.parent.span_id == process.context.span_id


def test_headers_without_context_start_a_trace_of_their_own(spans: Spans) -> None:
    assert kafka.extract([("other", b"x")]) is None
    assert kafka.extract([("traceparent", b"not-a-traceparent")]) is None
    with kafka.batch_span("t", [Event(Message([("k", b"v")]))]):
        pass
    [span] = spans.named("process t")
    assert span.parent is None and not span.links


class Writer:
    """TEST DOUBLE: records the calls a traced writer passes on."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def flush(self) -> None:
        self.calls.append("flush")

    def delete(self, scope: Any, session_id: str | None = None) -> Any:
        from memstrata.roles import DeleteReceipt

        self.calls.append("delete")
        return DeleteReceipt(scope=scope, session_id=session_id, removed={"docs": 2})

    def warm_up(self) -> str:
        return "warmed"


def test_a_traced_writer_spans_each_write_and_passes_the_rest_through(spans: Spans) -> None:
    from memstrata.model import Scope

    inner = Writer()
    writer: Any = traced_writer(inner)  # type: ignore[arg-type]
    writer.delete(Scope(tenant_id="acme", user_id="u"), "s1")
    writer.flush()
    assert inner.calls == ["delete", "flush"] and writer.warm_up() == "warmed"
    [delete] = spans.named("delete_memory memstrata")
    assert delete.attributes["gen_ai.operation.name"] == "delete_memory"
    assert delete.attributes["memstrata.tenant_id"] == "acme"
    assert delete.attributes["memstrata.delete.removed"] == 2
    assert spans.named("memstrata.store.flush")
