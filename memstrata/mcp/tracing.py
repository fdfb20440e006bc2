"""Trace context of MCP requests: an agent's trace continues through ``memstrata mcp``.

A caller's W3C ``traceparent`` (and ``tracestate``) arrives in the request's
``_meta`` (the MCP convention, which the SDK's own client fills in) or in the
HTTP headers of the streamable-HTTP transport. :class:`TraceHeaders` makes the
headers' context current for the request; :class:`McpSpans` opens one SERVER
span per MCP message under the ``_meta`` context when it carries one, else
under the current one. The tool's gRPC calls to the service are made inside
that span, so the gRPC instrumentation puts its context in their metadata and
the service's spans join the same trace.

:class:`McpSpans` stands in for the SDK's ``OpenTelemetryMiddleware`` (same span
names and attributes): the SDK's writes to the process-wide provider, this one
to memstrata's (:mod:`memstrata.telemetry.state`), which is the same provider
in ``memstrata mcp`` and an in-memory one in tests. Off, both cost one test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memstrata.telemetry.state import STATE

__all__ = ["McpSpans", "TraceHeaders", "note_caller", "replace_sdk_spans"]

#: The propagation headers read from HTTP requests.
_HEADERS = (b"traceparent", b"tracestate")


def _context_of(carrier: Mapping[str, Any] | None) -> Any:
    """The context a W3C carrier names, or None when it names no valid span."""
    if not carrier or "traceparent" not in carrier:
        return None
    from opentelemetry import propagate, trace

    try:
        ctx = propagate.extract(carrier)
    except (TypeError, ValueError):
        return None
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def note_caller(tenant: str, via: str) -> None:
    """The tenant and credential kind on the current MCP span (only while tracing)."""
    if STATE.tracer is None:
        return
    from opentelemetry import trace

    from memstrata.telemetry.genai import TENANT

    span = trace.get_current_span()
    span.set_attribute(TENANT, tenant)
    span.set_attribute("memstrata.mcp.auth", via)


class TraceHeaders:
    """ASGI middleware: the ``traceparent`` of an HTTP request becomes the current context
    while the request runs (nothing is read while tracing is off)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if STATE.tracer is None or scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1")
                   for k, v in scope.get("headers", ()) if k in _HEADERS}
        ctx = _context_of(carrier)
        if ctx is None:
            await self.app(scope, receive, send)
            return
        from opentelemetry import context

        token = context.attach(ctx)
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)


class McpSpans:
    """Context-tier SDK middleware: one SERVER span per MCP message, parented by the
    request's ``_meta`` trace context, else by the current one (the HTTP headers')."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if STATE.tracer is None:
            return await call_next(ctx)
        from opentelemetry.trace import SpanKind, StatusCode

        from memstrata.telemetry.genai import OPERATION, TOOL_NAME

        name = ctx.params.get("name") if ctx.params else None
        target = name if isinstance(name, str) else None
        attributes: dict[str, Any] = {"mcp.method.name": ctx.method,
                                      "mcp.protocol.version": ctx.protocol_version}
        if ctx.request_id is not None:
            attributes["jsonrpc.request.id"] = str(ctx.request_id)
        if ctx.method == "tools/call":
            attributes[OPERATION] = "execute_tool"
            if target is not None:
                attributes[TOOL_NAME] = target
        with STATE.tracer.start_as_current_span(
                f"{ctx.method} {target}" if target else ctx.method, kind=SpanKind.SERVER,
                context=_context_of(ctx.meta), attributes=attributes,
                record_exception=True, set_status_on_exception=True) as span:
            result = await call_next(ctx)
            if ctx.method == "tools/call" and getattr(result, "is_error", False):
                span.set_attribute("error.type", "tool_error")
                span.set_status(StatusCode.ERROR)
            return result


def replace_sdk_spans(middleware: list[Any]) -> None:
    """Put :class:`McpSpans` where the SDK's OpenTelemetry middleware stood (outermost)."""
    try:
        from mcp.server._otel import OpenTelemetryMiddleware
    except ImportError:  # the SDK moved it: ours goes first, theirs stays
        middleware.insert(0, McpSpans())
        return
    at = next((i for i, m in enumerate(middleware)
               if isinstance(m, OpenTelemetryMiddleware)), 0)
    middleware[:] = [m for m in middleware if not isinstance(m, OpenTelemetryMiddleware)]
    middleware.insert(at, McpSpans())
