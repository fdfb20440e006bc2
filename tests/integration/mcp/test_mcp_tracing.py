"""An agent's trace continues through ``memstrata mcp`` into the service.

Everything in this process, so one in-memory exporter sees every span: the
query service built after tracing is on (its gRPC server interceptor is added
at build time) over the real embedded memory, and the MCP server's real
Starlette app (streamable HTTP, bearer keys) driven by Starlette's test client
with raw JSON-RPC requests, so the test chooses exactly where the caller's
``traceparent`` travels: the HTTP headers, or the request's ``_meta``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install -e '.[all,test]')")
pytest.importorskip("opentelemetry.sdk", reason="tracing needs the otel extra")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from memstrata.client.settings import ClientSettings
from memstrata.mcp.server import build, http_app
from memstrata.mcp.settings import McpSettings
from tests.support.traced_service import traced_service

pytestmark = pytest.mark.integration

#: The agent's trace and its span that called the tool (W3C ids, as an agent sends them).
AGENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
AGENT_SPAN = "00f067aa0ba902b7"
OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c"
OTHER_SPAN = "b7ad6b7169203331"


def traceparent(trace_id: str, span_id: str) -> str:
    return f"00-{trace_id}-{span_id}-01"


@dataclass
class Traced:
    exporter: InMemorySpanExporter
    client: Any  # starlette TestClient over the MCP app
    key: str

    def call(self, tool: str, args: dict[str, Any], *, headers: dict[str, str] | None = None,
             meta: dict[str, str] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool, "arguments": args}
        if meta is not None:
            params["_meta"] = meta
        r = self.client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                            "params": params},
                             headers={"Accept": "application/json, text/event-stream",
                                      "Authorization": f"Bearer {self.key}",
                                      **(headers or {})})
        assert r.status_code == 200, r.text
        body = r.json()
        assert not body["result"].get("isError"), body
        return body["result"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Traced]:
    from starlette.testclient import TestClient

    with traced_service(tmp_path_factory.mktemp("mcp-traced"), embedder) as svc:
        settings = McpSettings()
        served = build(settings, svc.address, ClientSettings())
        with TestClient(http_app(served, settings), base_url="http://127.0.0.1:8000") as c:
            yield Traced(svc.exporter, c, svc.key)


def _spans(traced: Traced) -> list[ReadableSpan]:
    return list(traced.exporter.get_finished_spans())


def _chain(spans: list[ReadableSpan], tool: str, method: str
           ) -> tuple[ReadableSpan, ReadableSpan, ReadableSpan]:
    """The MCP tool span, the gRPC client span under it, the service's span under that."""
    [mcp] = [s for s in spans if s.name == f"tools/call {tool}"]
    name = f"/memstrata.v1.MemoryService/{method}"
    [client] = [s for s in spans if s.name == name and s.kind == SpanKind.CLIENT
                and s.parent is not None and s.parent.span_id == mcp.context.span_id]
    [server] = [s for s in spans if s.name == name and s.kind == SpanKind.SERVER
                and s.parent is not None and s.parent.span_id == client.context.span_id]
    return mcp, client, server


def test_a_traceparent_header_continues_the_agents_trace_through_the_service(
        traced: Traced) -> None:
    traced.exporter.clear()
    result = traced.call("search_memory", {"query": "kitten name", "user": "maya"},
                         headers={"traceparent": traceparent(AGENT_TRACE, AGENT_SPAN)})
    assert result["structuredContent"]["hits"]
    spans = _spans(traced)
    mcp, client, server = _chain(spans, "search_memory", "Search")
    assert mcp.kind == SpanKind.SERVER
    assert mcp.parent is not None and f"{mcp.parent.span_id:016x}" == AGENT_SPAN
    assert mcp.attributes["gen_ai.operation.name"] == "execute_tool"
    assert mcp.attributes["gen_ai.tool.name"] == "search_memory"
    assert mcp.attributes["memstrata.tenant_id"] == "acme"
    assert mcp.attributes["memstrata.mcp.auth"] == "key"
    [search] = [s for s in spans if s.name == "search_memory memstrata"]
    assert search.parent is not None and search.parent.span_id == server.context.span_id
    # One trace, the agent's, from the tool call down to the store search.
    for span in (mcp, client, server, search):
        assert f"{span.context.trace_id:032x}" == AGENT_TRACE, span.name


def test_meta_carries_the_context_and_wins_over_the_header(traced: Traced) -> None:
    traced.exporter.clear()
    traced.call("list_sessions", {"user": "maya"},
                headers={"traceparent": traceparent(OTHER_TRACE, OTHER_SPAN)},
                meta={"traceparent": traceparent(AGENT_TRACE, AGENT_SPAN)})
    mcp, client, server = _chain(_spans(traced), "list_sessions", "ListSessions")
    assert mcp.parent is not None and f"{mcp.parent.span_id:016x}" == AGENT_SPAN
    assert {f"{s.context.trace_id:032x}" for s in (mcp, client, server)} == {AGENT_TRACE}


def test_without_a_traceparent_a_tool_call_starts_its_own_trace(traced: Traced) -> None:
    traced.exporter.clear()
    traced.call("list_sessions", {"user": "maya"},
                meta={"traceparent": "00-not-a-trace-01"})  # malformed: ignored
    mcp, client, server = _chain(_spans(traced), "list_sessions", "ListSessions")
    assert mcp.parent is None
    assert client.context.trace_id == server.context.trace_id == mcp.context.trace_id
