"""Every call's metrics, API key, tenant limits and size check, in one wrapper per call.

These were four interceptors (metrics, auth, limits, size), each awaiting the
next and rebuilding the handler around an async context manager, so every
call paid four handler rebuilds, three context managers and four coroutine
layers on the event loop thread, which carries every call's I/O. Here one
interceptor decides what the call is (an open method, a refusal, a tenant's
call) and wraps the handler once. The steps and outcomes are those of the
four, in their order:

1. **metrics** (outermost): in-flight gauge, latency and errors by method and
   status code, for refused calls too; the metric children are looked up once
   per label set;
2. **auth** (:mod:`query_service.interceptors.auth`): the API key names the
   call's tenant, or the call is answered UNAUTHENTICATED / PERMISSION_DENIED
   without running (nothing below runs then);
3. **limits**: the tenant's rate and concurrency limits
   (:class:`~query_service.limits.TenantGate`), RESOURCE_EXHAUSTED with a
   ``retry-after-ms`` hint, a slot held for the whole call. A call the limits
   refuse is refused before its request is read, and answered late
   (:mod:`query_service.interceptors.refusals`: held until its retry-after),
   so a caller that retries at once cannot spend the server's CPU on refusals;
   held refusals are not counted in flight and their hold is not latency;
4. **size** (:mod:`query_service.transport`): INVALID_ARGUMENT naming the
   request's largest field when it is over the service's limit.

Health checks and reflection (``/grpc.*``) pass untouched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from query_service.calls import CALL, CallInfo, method_name
from query_service.interceptors.auth import (
    BAD_KEY,
    KEYS_UNAVAILABLE,
    NO_KEY,
    TENANT_HEADER,
    key_from_metadata,
)
from query_service.interceptors.metrics import code_of
from query_service.interceptors.refusals import RefusalPacer
from query_service.interceptors.wrap import denying_handler
from query_service.keys import KeyRing
from query_service.limits import TenantGate
from query_service.metrics import ServiceMetrics
from query_service.transport import too_large

log = logging.getLogger(__name__)

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]]


class CallInterceptor(grpc.aio.ServerInterceptor):
    """Metrics, auth, limits and size of every non-``/grpc.*`` call (see the module)."""

    def __init__(self, metrics: ServiceMetrics, keys: KeyRing, gate: TenantGate,
                 max_message_bytes: int, pacer: RefusalPacer | None = None) -> None:
        """``pacer``: how refusals are answered (None: at once, none held)."""
        self.metrics = metrics
        self.keys = keys
        self.gate = gate
        self.limit = max_message_bytes
        self.pacer = pacer if pacer is not None else RefusalPacer(0.0, 0)
        # Deny handlers are built once per kind and reason.
        self._denials: dict[tuple[bool, grpc.StatusCode, str], grpc.RpcMethodHandler] = {}
        self._children: dict[tuple[Any, ...], Any] = {}
        #: The key ring raised on the last call (logged once until a call succeeds).
        self._keys_failing = False

    # -- metrics, children looked up once ---------------------------------------
    def _child(self, metric: Any, **labels: str) -> Any:
        key = (id(metric), *labels.values())
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(**labels)
        return child

    def _begin(self, info: CallInfo) -> None:
        CALL.set(info)
        info.started = time.perf_counter()
        self._child(self.metrics.in_flight, method=info.method).inc()

    def _end(self, info: CallInfo, context: Any, exc: BaseException | None, *,
             counted: bool = True) -> None:
        """``counted``: the call was counted in flight by :meth:`_begin`."""
        m = self.metrics
        if counted:
            self._child(m.in_flight, method=info.method).dec()
        code = code_of(context, exc).name
        t = m._t(info.tenant)
        self._child(m.latency, method=info.method, code=code, **t).observe(
            time.perf_counter() - info.started)
        if code != "OK":
            self._child(m.errors, method=info.method, code=code, **t).inc()

    # -- auth ---------------------------------------------------------------------
    def _deny(self, handler: grpc.RpcMethodHandler, code: grpc.StatusCode,
              details: str) -> grpc.RpcMethodHandler:
        key = (handler.response_streaming, code, details)
        if key not in self._denials:
            self._denials[key] = denying_handler(handler, code, details)
        return self._denials[key]

    def _tenant_for(self, key: str) -> str | None | Exception:
        """The key's tenant (None: refused), or the error that kept the ring from answering.

        The ring keeps its last good keys when the file goes bad, so an error here
        is a bug; it is logged once per run of failures (with its traceback) and
        never reaches the caller, whose status would otherwise quote it.
        """
        try:
            tenant = self.keys.tenant_for(key)
        except Exception as exc:  # noqa: BLE001 - answered UNAVAILABLE, logged once
            if not self._keys_failing:
                self._keys_failing = True
                log.exception("cannot check API keys; calls are refused until this clears")
            return exc
        self._keys_failing = False
        return tenant

    def _authenticate(self, handler: grpc.RpcMethodHandler, method: str, metadata: Any
                      ) -> tuple[str | None, grpc.RpcMethodHandler]:
        """(the call's tenant, handler), or (None, a handler that refuses the call)."""
        key = key_from_metadata(metadata)
        if key is None:
            return None, self._deny(handler, grpc.StatusCode.UNAUTHENTICATED, NO_KEY)
        tenant = self._tenant_for(key)
        if isinstance(tenant, Exception):
            return None, self._deny(handler, grpc.StatusCode.UNAVAILABLE, KEYS_UNAVAILABLE)
        if tenant is None:
            log.info("refused a call to %s: invalid or revoked key", method)
            return None, self._deny(handler, grpc.StatusCode.UNAUTHENTICATED, BAD_KEY)
        # An empty claim states nothing: the key's tenant applies, as with no header.
        claimed = next((str(v) for k, v in metadata or () if k == TENANT_HEADER), None)
        if claimed and claimed != tenant:
            return None, self._deny(handler, grpc.StatusCode.PERMISSION_DENIED,
                                    f"{TENANT_HEADER}: this API key does not belong to "
                                    f"tenant {claimed!r}")
        return tenant, handler

    # -- limits and size ------------------------------------------------------------
    async def _admit(self, info: CallInfo, tenant: str, context: Any) -> None:
        """Take the tenant's slot (the caller releases it) or refuse the call.

        Most refusals happen before the request is read (:meth:`_refusing`); this
        one is for a call that passed that check while other calls took the
        tokens before its message arrived.
        """
        refused = self.gate.admit(tenant)
        if refused is not None:
            in_flight = self._child(self.metrics.in_flight, method=info.method)
            in_flight.dec()  # a held refusal is not a call being served
            try:
                await self._refuse(info, tenant, *refused, context)
            finally:
                in_flight.inc()

    async def _refuse(self, info: CallInfo, tenant: str, limit: str, retry_s: float,
                      context: Any) -> None:
        """Count the refusal, hold it as the pacer says, answer RESOURCE_EXHAUSTED.

        The hold is left out of the call's latency metric: it is chosen, not
        service time (``memstrata_rpc_rate_limited`` counts the refusals).
        """
        gate, metrics = self.gate, self.metrics
        self._child(metrics.rate_limited, method=info.method, limit=limit,
                    **metrics._t(tenant)).inc()
        lim = gate.limits(tenant)
        began = time.perf_counter()
        try:
            hint_s = await self.pacer.refuse_late(tenant, retry_s, lim.rate_per_s,
                                                  context.time_remaining())
        finally:
            info.started += time.perf_counter() - began
        what = (f"{lim.max_concurrent} calls in flight" if limit == "concurrency"
                else f"{lim.rate_per_s:g} calls/s (burst {lim.burst})")
        hint_ms = max(1, round(hint_s * 1000))
        context.set_trailing_metadata((("retry-after-ms", str(hint_ms)),))
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                            f"tenant {tenant}: {limit} limit of {what} reached; retry "
                            f"in {hint_ms} ms")

    def _refusing(self, handler: grpc.RpcMethodHandler, method: str, tenant: str,
                  limit: str, retry_s: float) -> grpc.RpcMethodHandler:
        """A handler that refuses the call without reading its request.

        It is of the request-streaming kind: gRPC then reads no message until the
        handler asks for one, and this one never asks, so a refused call is not
        read, not decoded, and a held one keeps no request bytes.
        """

        async def refuse(context: Any) -> None:
            info = CallInfo(method=method, tenant=tenant)
            info.started = time.perf_counter()
            exc: BaseException | None = None
            try:
                await self._refuse(info, tenant, limit, retry_s, context)
            except BaseException as e:  # noqa: BLE001 - recorded, then re-raised
                exc = e
                raise
            finally:
                self._end(info, context, exc, counted=False)

        async def refuse_unary(requests: Any, context: Any) -> Any:
            await refuse(context)

        async def refuse_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
            await refuse(context)
            yield  # pragma: no cover - refuse() raises

        if handler.response_streaming:
            return grpc.stream_stream_rpc_method_handler(
                refuse_stream, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        return grpc.stream_unary_rpc_method_handler(
            refuse_unary, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)

    async def _check_size(self, request: Any, context: Any) -> None:
        why = too_large(request, self.limit)
        if why is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)

    # -- the wrapper ------------------------------------------------------------------
    async def intercept_service(self, continuation: Continuation,
                                handler_call_details: grpc.HandlerCallDetails
                                ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        full = handler_call_details.method
        if handler is None or full.startswith("/grpc."):
            return handler
        method = method_name(full)
        tenant, run = self._authenticate(handler, full,
                                         handler_call_details.invocation_metadata)
        if tenant is not None and (refused := self.gate.peek(tenant)) is not None:
            return self._refusing(run, method, tenant, *refused)
        info = CallInfo(method=method)
        gate = self.gate

        if run.unary_unary is not None:
            inner_uu: Callable[[Any, Any], Awaitable[Any]] = run.unary_unary

            async def unary(request: Any, context: Any) -> Any:
                self._begin(info)
                exc: BaseException | None = None
                try:
                    if tenant is None:  # refused by auth: nothing else runs
                        return await inner_uu(request, context)
                    info.tenant = tenant
                    await self._admit(info, tenant, context)
                    try:
                        await self._check_size(request, context)
                        return await inner_uu(request, context)
                    finally:
                        gate.release(tenant)
                except BaseException as e:  # noqa: BLE001 - recorded, then re-raised
                    exc = e
                    raise
                finally:
                    self._end(info, context, exc)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=run.request_deserializer,
                response_serializer=run.response_serializer)
        if run.unary_stream is not None:
            inner_us: Callable[[Any, Any], AsyncIterator[Any]] = run.unary_stream

            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                self._begin(info)
                exc: BaseException | None = None
                try:
                    if tenant is None:
                        async for item in inner_us(request, context):
                            yield item
                        return
                    info.tenant = tenant
                    await self._admit(info, tenant, context)
                    try:
                        await self._check_size(request, context)
                        async for item in inner_us(request, context):
                            yield item
                    finally:
                        gate.release(tenant)
                except BaseException as e:  # noqa: BLE001
                    exc = e
                    raise
                finally:
                    self._end(info, context, exc)

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=run.request_deserializer,
                response_serializer=run.response_serializer)
        return handler  # client-streaming kinds: none in this service
