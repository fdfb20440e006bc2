"""gRPC: the trace context in each call's metadata, only while tracing is on.

The server and the asyncio client use ``opentelemetry-instrumentation-grpc``
as it is (its ``aio_server_interceptor`` serves ``grpc.aio`` servers): the
server span is a child of the caller's. The blocking client uses a small
interceptor of ours instead (see :func:`intercept_channel`). Interceptors are
added where memstrata builds its server and channels rather than by patching
``grpc`` process-wide, so a process that does not trace keeps them untouched.
"""

from __future__ import annotations

import logging
from typing import Any

from memstrata.telemetry.state import STATE, propagating

__all__ = ["aio_client_interceptors", "intercept_channel", "server_interceptors"]

log = logging.getLogger("memstrata.telemetry")


def _instrumentation() -> Any:
    try:
        from opentelemetry.instrumentation import grpc as otel_grpc
    except ImportError:
        log.warning("opentelemetry-instrumentation-grpc is not installed: gRPC calls carry "
                    "no trace context (pip install 'memstrata[otel]')")
        return None
    return otel_grpc


def server_interceptors() -> list[Any]:
    """The server span interceptor (first in line, so it covers the others); [] when off."""
    if STATE.tracer is None:
        return []
    otel_grpc = _instrumentation()
    if otel_grpc is None:
        return []
    return [otel_grpc.aio_server_interceptor(tracer_provider=STATE.provider)]


def intercept_channel(channel: Any) -> Any:
    """A blocking channel that sends the trace context (the channel itself when off).

    Not the instrumentation's blocking-client interceptor: it hands a response
    stream back as a plain generator, and the client cancels streams it stops
    reading (``call.cancel()``). This one keeps gRPC's own call objects.
    """
    if not propagating():
        return channel
    import grpc

    return grpc.intercept_channel(channel, _client_interceptor())


def aio_client_interceptors() -> list[Any] | None:
    """Interceptors for a ``grpc.aio`` channel (None when off: pass it as is)."""
    if not propagating():
        return None
    otel_grpc = _instrumentation()
    if otel_grpc is None:
        return None
    return list(otel_grpc.aio_client_interceptors(tracer_provider=STATE.provider))


def _client_interceptor() -> Any:
    """A CLIENT span per call (the RPC conventions' name and attributes), its context in
    the call's metadata; the span ends when the call does, with its status code."""
    import grpc
    from opentelemetry import propagate, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

    tracer = trace.get_tracer("memstrata.grpc.client", tracer_provider=STATE.provider)

    class Details(grpc.ClientCallDetails):  # type: ignore[misc]
        def __init__(self, base: Any, metadata: list[tuple[str, str | bytes]]) -> None:
            self.method, self.timeout, self.metadata = base.method, base.timeout, metadata
            self.credentials = base.credentials
            self.wait_for_ready = getattr(base, "wait_for_ready", None)
            self.compression = getattr(base, "compression", None)

    class TraceContextInterceptor(grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
                                  grpc.UnaryStreamClientInterceptor,
                                  grpc.StreamUnaryClientInterceptor,
                                  grpc.StreamStreamClientInterceptor):
        def _call(self, continuation: Any, details: Any, request: Any) -> Any:
            method = details.method.decode() if isinstance(details.method, bytes) \
                else str(details.method)
            service, _, name = method.lstrip("/").partition("/")
            span = tracer.start_span(method, kind=SpanKind.CLIENT, attributes={
                "rpc.system": "grpc", "rpc.service": service, "rpc.method": name})
            carrier: dict[str, str] = {}
            propagate.inject(carrier, context=trace.set_span_in_context(span))
            metadata = [*(details.metadata or ()), *carrier.items()]
            try:
                call = continuation(Details(details, metadata), request)
            except BaseException:
                span.end()
                raise

            def done(finished: Any) -> None:
                code = finished.code() if hasattr(finished, "code") else None
                if code is not None:
                    span.set_attribute("rpc.grpc.status_code", code.value[0])
                    if code != grpc.StatusCode.OK:
                        span.set_status(Status(StatusCode.ERROR, code.name))
                span.end()

            call.add_done_callback(done)
            return call

        def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            return self._call(continuation, details, request)

        def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
            return self._call(continuation, details, request)

        def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
            return self._call(continuation, details, requests)

        def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any
                                    ) -> Any:
            return self._call(continuation, details, requests)

    return TraceContextInterceptor()
