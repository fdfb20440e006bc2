"""Times every call and counts its outcome by method and status code (outermost interceptor)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc

from query_service.calls import CALL, CallInfo, method_name
from query_service.interceptors.wrap import wrap_handler
from query_service.metrics import ServiceMetrics


def _code_of(context: Any, exc: BaseException | None) -> grpc.StatusCode:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(exc, asyncio.CancelledError):
        remaining = context.time_remaining()
        return (grpc.StatusCode.DEADLINE_EXCEEDED if remaining is not None and remaining <= 0
                else grpc.StatusCode.CANCELLED)
    return grpc.StatusCode.OK if exc is None else grpc.StatusCode.UNKNOWN


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, metrics: ServiceMetrics) -> None:
        self.metrics = metrics

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails],
                                     Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = method_name(handler_call_details.method)
        if handler_call_details.method.startswith("/grpc."):
            return await continuation(handler_call_details)
        info = CallInfo(method=method)
        token = CALL.set(info)
        try:
            handler = await continuation(handler_call_details)
        finally:
            CALL.reset(token)
        m = self.metrics

        @asynccontextmanager
        async def timed(context: Any) -> AsyncIterator[None]:
            CALL.set(info)
            info.started = time.perf_counter()
            m.in_flight.labels(method=method).inc()
            exc: BaseException | None = None
            try:
                yield
            except BaseException as e:  # noqa: BLE001 - recorded, then re-raised
                exc = e
                raise
            finally:
                m.in_flight.labels(method=method).dec()
                code = _code_of(context, exc).name
                t = m._t(info.tenant)
                m.latency.labels(method=method, code=code, **t).observe(
                    time.perf_counter() - info.started)
                if code != "OK":
                    m.errors.labels(method=method, code=code, **t).inc()

        return wrap_handler(handler, timed)  # type: ignore[return-value]
