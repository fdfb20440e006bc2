"""Trace context in Kafka record headers, and the spans of the records' consumers.

Producers need nothing from here: with tracing on, the aiokafka instrumentation
(switched on by :func:`memstrata.telemetry.setup.install`) opens a ``send`` span
for every record an ``AIOKafkaProducer`` sends and writes its W3C
``traceparent`` into the record's headers: ``memstrata produce``, the query
service's Ingest, the worker's L0 notices and DLQ records, the control events.

Consumers read it back here. The stream worker writes turns in batches, so a
batch is one ``process <topic>`` span (messaging conventions, kind CONSUMER)
whose parent is the first record's producer and which links every other
record's producer; each other trace in the batch gets a ``process`` span of its
own, linked to the batch span, so every producer's trace shows the worker.
The store writes of the batch are children of the batch span.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from memstrata.telemetry.state import NULL, STATE

__all__ = ["MAX_LINKS", "batch_span", "child_span", "extract", "record_span", "span_context"]

#: Links (and companion spans) per batch span at most: a batch of many producers'
#: records stays one bounded span.
MAX_LINKS = 128


def _pairs(headers: Any) -> list[tuple[str, Any]]:
    if not headers:
        return []
    if isinstance(headers, Mapping):
        return list(headers.items())
    return [(str(k), v) for k, v in headers]


class _Getter:
    """Reads W3C trace context from Kafka headers: (str, bytes) pairs, or a mapping."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        for name, value in _pairs(carrier):
            if name == key and value is not None:
                return [value.decode("utf-8", "replace") if isinstance(value, bytes)
                        else str(value)]
        return None

    def keys(self, carrier: Any) -> list[str]:
        return [name for name, _ in _pairs(carrier)]


_GETTER = _Getter()


def extract(headers: Any) -> Any:
    """The trace context a record's headers carry (an OpenTelemetry Context), or None."""
    if STATE.tracer is None or not headers:
        return None
    from opentelemetry import propagate, trace

    ctx = propagate.extract(headers, getter=_GETTER)  # type: ignore[arg-type]
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def span_context(span: Any) -> Any:
    """The context to parent later work under ``span`` (None when tracing is off)."""
    if STATE.tracer is None or span is None:
        return None
    from opentelemetry import trace

    return trace.set_span_in_context(span)


def _attributes(topic: str, group: str | None, count: int | None = None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"messaging.system": "kafka", "messaging.operation.type": "process",
                             "messaging.operation.name": "process",
                             "messaging.destination.name": topic}
    if group:
        attrs["messaging.consumer.group.name"] = group
    if count is not None:
        attrs["messaging.batch.message_count"] = count
    return attrs


def batch_span(topic: str, events: Sequence[Any], *, group: str | None = None,
               headers_of: Callable[[Any], Any] | None = None) -> AbstractContextManager[Any]:
    """One span over the processing of a batch of records (no-op when tracing is off).

    ``headers_of(event)`` gives an event's record headers (default: a Faust event's
    ``event.message.headers``).
    """
    if STATE.tracer is None:
        return NULL
    return _batch(topic, events, group, headers_of or _faust_headers)


def _faust_headers(event: Any) -> Any:
    return event.message.headers


@contextmanager
def _batch(topic: str, events: Sequence[Any], group: str | None,
           headers_of: Callable[[Any], Any]) -> Iterator[Any]:
    from opentelemetry import trace

    parents: list[tuple[Any, Any]] = []
    seen: set[tuple[int, int]] = set()
    for event in events:
        ctx = extract(headers_of(event))
        if ctx is None:
            continue
        sc = trace.get_current_span(ctx).get_span_context()
        if (sc.trace_id, sc.span_id) not in seen and len(parents) <= MAX_LINKS:
            seen.add((sc.trace_id, sc.span_id))
            parents.append((ctx, sc))
    attrs = _attributes(topic, group, len(events))
    first = parents[0][0] if parents else None
    links = [trace.Link(sc) for _, sc in parents[1:]]
    tracer = STATE.tracer
    with tracer.start_as_current_span(f"process {topic}", context=first, links=links,
                                      kind=trace.SpanKind.CONSUMER, attributes=attrs) as span:
        here = trace.Link(span.get_span_context())
        traces = {parents[0][1].trace_id} if parents else set()
        companions = []
        for ctx, sc in parents[1:]:
            if sc.trace_id in traces:
                continue
            traces.add(sc.trace_id)
            companions.append(tracer.start_span(f"process {topic}", context=ctx, links=[here],
                                                kind=trace.SpanKind.CONSUMER, attributes=attrs))
        try:
            yield span
        finally:
            for companion in companions:
                companion.end()


def record_span(topic: str, headers: Any, *, group: str | None = None
                ) -> AbstractContextManager[Any]:
    """A ``process <topic>`` span for one consumed record, child of its producer's span."""
    if STATE.tracer is None:
        return NULL
    return _record(topic, headers, group)


@contextmanager
def _record(topic: str, headers: Any, group: str | None) -> Iterator[Any]:
    from opentelemetry import trace

    with STATE.tracer.start_as_current_span(
            f"process {topic}", context=extract(headers), kind=trace.SpanKind.CONSUMER,
            attributes=_attributes(topic, group)) as span:
        yield span


def child_span(name: str, parent: Any, attributes: Mapping[str, Any] | None = None
               ) -> AbstractContextManager[Any]:
    """A span under ``parent`` (a context from :func:`span_context`; None: the current one)."""
    if STATE.tracer is None:
        return NULL
    return STATE.tracer.start_as_current_span(  # type: ignore[no-any-return]
        name, context=parent, attributes=dict(attributes or {}))
