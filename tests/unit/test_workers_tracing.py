"""The trace context a call to a Ray actor carries: injected by the caller, restored in
the actor, so the actor's spans are children of the caller's span in one trace. The
actor side runs here on a thread that starts with an empty context, as a Ray worker
process does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.tracing import in_memory_spans
from workers.tracing import call_in, carrier, restored


@pytest.fixture
def exporter() -> Iterator[Any]:
    pytest.importorskip("opentelemetry.sdk", reason="tracing needs the otel extra")
    with in_memory_spans() as out:
        yield out


def _actor_span(name: str) -> str:
    from memstrata.telemetry.state import tracer

    with tracer().start_as_current_span(name):
        return name


def test_actor_spans_join_the_callers_trace(exporter):
    from memstrata.telemetry.state import tracer

    with tracer().start_as_current_span("service"):
        headers = carrier()
    assert "traceparent" in headers

    def rollout_actor() -> None:  # RolloutWorker.answer: the block under restored()
        with restored(headers):
            _actor_span("rollout")

    t = threading.Thread(target=rollout_actor)
    t.start()
    t.join()
    with ThreadPoolExecutor(1) as pool:  # Materializer.build: a thread of its pool
        pool.submit(call_in, headers, _actor_span, "build").result()
    with ThreadPoolExecutor(1) as pool:  # without the carrier: a trace of its own
        pool.submit(_actor_span, "orphan").result()

    spans = {s.name: s for s in exporter.get_finished_spans()}
    service = spans["service"].context
    for name in ("rollout", "build"):
        assert spans[name].context.trace_id == service.trace_id
        assert spans[name].parent.span_id == service.span_id
    assert spans["orphan"].context.trace_id != service.trace_id


def test_nothing_is_carried_or_restored_with_tracing_off():
    assert carrier() == {}
    with restored({"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}):
        pass  # tracing off: ignored, nothing attached
    assert call_in(None, len, "abc") == 3
