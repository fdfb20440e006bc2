"""Per-tenant rate and concurrency limits: RESOURCE_EXHAUSTED with a retry hint."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc

from query_service.calls import current_call, method_name
from query_service.interceptors.wrap import wrap_handler
from query_service.limits import TenantGate
from query_service.metrics import ServiceMetrics


class LimitsInterceptor(grpc.aio.ServerInterceptor):
    """Runs after auth (it needs the tenant); holds a slot for the whole call."""

    def __init__(self, gate: TenantGate, metrics: ServiceMetrics) -> None:
        self.gate = gate
        self.metrics = metrics

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails],
                                     Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler_call_details.method.startswith("/grpc."):
            return handler
        method = method_name(handler_call_details.method)
        gate, metrics = self.gate, self.metrics

        @asynccontextmanager
        async def limited(context: Any) -> AsyncIterator[None]:
            tenant = current_call(method).tenant
            if tenant is None:  # auth refused the call already
                yield
                return
            refused = gate.admit(tenant)
            if refused is not None:
                limit, retry_s = refused
                metrics.rate_limited.labels(method=method, limit=limit,
                                            **metrics._t(tenant)).inc()
                lim = gate.limits(tenant)
                what = (f"{lim.max_concurrent} calls in flight" if limit == "concurrency"
                        else f"{lim.rate_per_s:g} calls/s (burst {lim.burst})")
                context.set_trailing_metadata((("retry-after-ms", str(int(retry_s * 1000))),))
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    f"tenant {tenant}: {limit} limit of {what} reached; retry "
                                    f"in {retry_s * 1000:.0f} ms")
            try:
                yield
            finally:
                gate.release(tenant)

        return wrap_handler(handler, limited)  # type: ignore[return-value]
