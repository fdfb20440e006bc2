"""Traces across gRPC: a client call's context reaches the service, an Answer's spans follow.

A server of its own, built after tracing is switched on (the instrumentation's
aio server interceptor is added at build time), over the real embedded
memory; client and server share one in-memory exporter in this process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

pytest.importorskip("opentelemetry.sdk", reason="tracing needs the otel extra")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind

from memstrata.client import MemoryClient
from tests.support.conversation import ASKED_ON, MAYA
from tests.support.traced_service import traced_service

pytestmark = pytest.mark.integration


@dataclass
class Traced:
    client: MemoryClient
    exporter: InMemorySpanExporter
    address: str
    key: str

    def spans(self, method: str | None = None, timeout_s: float = 10.0) -> list[ReadableSpan]:
        """The finished spans; with ``method``, once that call's client span has ended too
        (gRPC ends a stream's call, and so its span, on a thread of its own)."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = list(self.exporter.get_finished_spans())
            if method is None or time.monotonic() > deadline or any(
                    s.name == f"/memstrata.v1.MemoryService/{method}"
                    and s.kind == SpanKind.CLIENT for s in spans):
                return spans
            time.sleep(0.02)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Traced]:
    with traced_service(tmp_path_factory.mktemp("traced-service"), embedder) as svc:
        with MemoryClient(svc.address, api_key=svc.key) as client:
            yield Traced(client, svc.exporter, svc.address, svc.key)


def _call(spans: list[ReadableSpan], method: str) -> tuple[ReadableSpan, ReadableSpan]:
    """The client span and the server span of the last call of ``method``."""
    name = f"/memstrata.v1.MemoryService/{method}"
    client = [s for s in spans if s.name == name and s.kind == SpanKind.CLIENT][-1]
    [server] = [s for s in spans if s.name == name and s.kind == SpanKind.SERVER
                and s.parent is not None and s.parent.span_id == client.context.span_id]
    return client, server


def test_an_answer_over_grpc_is_one_trace_from_the_client_to_its_steps(traced: Traced) -> None:
    traced.exporter.clear()
    answer = traced.client.answer(MAYA, "What is the name of my kitten?", ASKED_ON)
    spans = traced.spans("Answer")
    client, server = _call(spans, "Answer")
    assert client.context.trace_id == server.context.trace_id  # the metadata carried it
    [agent] = [s for s in spans if s.name == "invoke_agent memstrata.controller"]
    assert agent.parent.span_id == server.context.span_id  # across the answer thread pool
    steps = [s for s in spans if s.parent is not None
             and s.parent.span_id == agent.context.span_id]
    assert sorted((s.attributes["memstrata.step"], s.attributes["memstrata.step.tool"])
                  for s in steps) == sorted((st.step, st.tool) for st in answer.steps)
    # The reply names the trace, so a user can open it from the answer.
    assert answer.summary.trace_id == f"{client.context.trace_id:032x}"


def test_a_search_is_a_search_memory_span_under_the_call(traced: Traced) -> None:
    traced.exporter.clear()
    hits = traced.client.search(MAYA, "kitten name")
    spans = traced.spans("Search")
    _, server = _call(spans, "Search")
    [search] = [s for s in spans if s.name == "search_memory memstrata"]
    assert search.parent.span_id == server.context.span_id
    assert search.attributes["gen_ai.operation.name"] == "search_memory"
    assert search.attributes["memstrata.tenant_id"] == "acme"
    assert search.attributes["memstrata.hits"] == len(hits) > 0
    assert "gen_ai.retrieval.query.text" not in search.attributes  # content switch off


def test_a_streamed_answer_works_traced_and_names_its_trace(traced: Traced) -> None:
    traced.exporter.clear()
    events = list(traced.client.answer_stream(MAYA, "What is the name of my kitten?", ASKED_ON))
    answer = events[-1]
    assert answer.answer == "Pixel" and len(events) == len(answer.steps) + 1
    client, _ = _call(traced.spans("AnswerStream"), "AnswerStream")
    assert answer.summary.trace_id == f"{client.context.trace_id:032x}"


def test_the_async_client_carries_the_context_too(traced: Traced) -> None:
    from memstrata.client import AsyncMemoryClient

    async def ask() -> list[object]:
        async with AsyncMemoryClient(traced.address, api_key=traced.key) as client:
            return [e async for e in client.answer_stream(
                MAYA, "What is the name of my kitten?", ASKED_ON)]

    traced.exporter.clear()
    answer = asyncio.run(ask())[-1]
    spans = traced.spans()
    [server] = [s for s in spans if s.name == "/memstrata.v1.MemoryService/AnswerStream"
                and s.kind == SpanKind.SERVER]
    assert server.parent is not None and server.parent.is_remote  # the client's span
    assert answer.summary.trace_id == f"{server.context.trace_id:032x}"  # type: ignore[attr-defined]
