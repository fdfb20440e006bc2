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
   call's tenant (its own, or the one its ``x-memstrata-tenant`` header picks
   among a platform key's tenants) and holds the scope the call needs
   (:mod:`query_service.scopes`), or the call is answered UNAUTHENTICATED /
   PERMISSION_DENIED without running (nothing below runs then);
3. **limits**: the tenant's rate and concurrency limits
   (:class:`~query_service.limits.TenantGate`), RESOURCE_EXHAUSTED with a
   ``retry-after-ms`` hint, a slot held for the whole call. A call the limits
   refuse is refused before its request is read, and answered late
   (:mod:`query_service.interceptors.refusals`: held until its retry-after),
   so a caller that retries at once cannot spend the server's CPU on refusals;
   held refusals are not counted in flight and their hold is not latency;
4. **size** (:mod:`query_service.transport`): INVALID_ARGUMENT naming the
   request's largest field when it is over the service's limit;
5. **reach** (:func:`query_service.scopes.refused_request`): PERMISSION_DENIED
   naming the field when the request names a user a bound key may not reach, or
   a turn event's tenant the key may not act for.

Deletes, exports, admin calls and refused calls of admin keys are written to the
audit log (:mod:`query_service.audit`) once they end, with their outcome.

Health checks and reflection (``/grpc.*``) pass untouched.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from query_service import scopes
from query_service.audit import AuditLog
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
from query_service.keys import Grant, KeyRing
from query_service.limits import TenantGate
from query_service.metrics import ServiceMetrics
from query_service.transport import too_large

log = logging.getLogger(__name__)

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]]


class CallInterceptor(grpc.aio.ServerInterceptor):
    """Metrics, auth, limits and size of every non-``/grpc.*`` call (see the module)."""

    def __init__(self, metrics: ServiceMetrics, keys: KeyRing, gate: TenantGate,
                 max_message_bytes: int, pacer: RefusalPacer | None = None,
                 audit: AuditLog | None = None) -> None:
        """``pacer``: how refusals are answered (None: at once, none held); ``audit``:
        where audited calls are recorded (None: nowhere)."""
        self.metrics = metrics
        self.keys = keys
        self.audit = audit
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

    def _grant_for(self, key: str) -> Grant | None | Exception:
        """The key's grant (None: refused), or the error that kept the ring from answering.

        The ring keeps its last good keys when the file goes bad, so an error here
        is a bug; it is logged once per run of failures (with its traceback) and
        never reaches the caller, whose status would otherwise quote it.
        """
        try:
            grant = self.keys.grant_for(key)
        except Exception as exc:
            if not self._keys_failing:
                self._keys_failing = True
                log.exception("cannot check API keys; calls are refused until this clears")
            return exc
        self._keys_failing = False
        return grant

    def _authenticate(self, handler: grpc.RpcMethodHandler, full: str, metadata: Any
                      ) -> tuple[Grant | None, str | None, grpc.RpcMethodHandler, str | None]:
        """(grant, the call's tenant, handler, None) for a call that may run; for one that
        may not, (grant or None, None, a handler that refuses it, why: for the audit log)."""
        key = key_from_metadata(metadata)
        if key is None:
            return None, None, self._deny(handler, grpc.StatusCode.UNAUTHENTICATED,
                                          NO_KEY), NO_KEY
        grant = self._grant_for(key)
        if isinstance(grant, Exception):
            return None, None, self._deny(handler, grpc.StatusCode.UNAVAILABLE,
                                          KEYS_UNAVAILABLE), KEYS_UNAVAILABLE
        if grant is None:
            log.info("refused a call to %s: invalid or revoked key", full)
            return None, None, self._deny(handler, grpc.StatusCode.UNAUTHENTICATED,
                                          BAD_KEY), BAD_KEY
        # An empty claim states nothing: the key's tenant applies, as with no header.
        claimed = next((str(v) for k, v in metadata or () if k == TENANT_HEADER), None)
        if claimed and claimed not in grant.tenants:
            why = f"{TENANT_HEADER}: this API key does not belong to tenant {claimed!r}"
            return grant, None, self._deny(handler, grpc.StatusCode.PERMISSION_DENIED,
                                           why), why
        tenant = claimed or grant.tenant
        why_not = scopes.missing_scope(method_name(full), grant, tenant)
        if why_not is not None:
            return grant, None, self._deny(handler, grpc.StatusCode.PERMISSION_DENIED,
                                           why_not), why_not
        return grant, tenant, handler, None

    # -- audit ------------------------------------------------------------------------
    async def _record(self, method: str, grant: Grant | None, tenant: str | None,
                      request: Any, outcome: str, records: int | None = None,
                      detail: str = "") -> None:
        """One audit entry (ids and counts only), written off the event loop thread."""
        if self.audit is None:
            return
        fields = {"action": method, "via": "rpc",
                  "key_id": grant.key_id if grant is not None else "",
                  "tenant": tenant or (grant.tenant if grant is not None else ""),
                  "user": str(getattr(request, "user_id", "") or ""),
                  "session": str(getattr(request, "session_id", "") or ""),
                  "records": records, "outcome": outcome, "detail": detail}
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.audit.append_quietly(**fields) if self.audit else None)

    async def _reach(self, info: CallInfo, request: Any, context: Any,
                     trail: _Trail | None) -> None:
        """Refuse a request naming a user or tenant the key may not reach (audited when due)."""
        grant = info.grant
        why = scopes.refused_request(info.method, request, grant) if grant else None
        if why is None:
            return
        denied = grpc.StatusCode.PERMISSION_DENIED
        if trail is not None:
            await trail.write(denied.name, why)
        elif scopes.audited(info.method, grant, info.tenant, refused=True):
            await self._record(info.method, grant, info.tenant, request, denied.name,
                               detail=why)
        await context.abort(denied, why)

    def _trail(self, info: CallInfo, request: Any, context: Any
               ) -> tuple[_Trail | None, Any]:
        """An audited call's trail, and the context its handler gets (one whose abort
        writes the entry before the status leaves); else (None, the context)."""
        if self.audit is None or not scopes.recorded(info.method, info.grant, info.tenant,
                                                     request):
            return None, context
        trail = _Trail(self, info, request)
        return trail, _AuditedContext(context, trail)

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
            except BaseException as e:
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
        grant, tenant, run, why = self._authenticate(handler, full,
                                                     handler_call_details.invocation_metadata)
        if tenant is not None and (refused := self.gate.peek(tenant)) is not None:
            return self._refusing(run, method, tenant, *refused)
        info = CallInfo(method=method)
        gate = self.gate
        # A refusal by auth that the audit log keeps (an admin key's, or of an audited call).
        # (Calls without a valid key are not recorded: they would let anyone fill the log.)
        audit_refusal = (tenant is None and grant is not None
                         and scopes.audited(method, grant, None, refused=True))

        if run.unary_unary is not None:
            inner_uu: Callable[[Any, Any], Awaitable[Any]] = run.unary_unary

            async def unary(request: Any, context: Any) -> Any:
                self._begin(info)
                exc: BaseException | None = None
                trail: _Trail | None = None
                try:
                    if tenant is None:  # refused by auth: nothing else runs
                        if audit_refusal:
                            await self._record(method, grant, None, request,
                                               grpc.StatusCode.PERMISSION_DENIED.name,
                                               detail=why or "")
                        return await inner_uu(request, context)
                    info.tenant, info.grant = tenant, grant
                    info.key_id = grant.key_id if grant else None
                    trail, ctx = self._trail(info, request, context)
                    await self._admit(info, tenant, ctx)
                    try:
                        await self._check_size(request, ctx)
                        await self._reach(info, request, context, trail)
                        return await inner_uu(request, ctx)
                    finally:
                        gate.release(tenant)
                except BaseException as e:
                    exc = e
                    raise
                finally:
                    self._end(info, context, exc)
                    if trail is not None:  # before the reply leaves
                        await trail.write(code_of(context, exc).name)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=run.request_deserializer,
                response_serializer=run.response_serializer)
        if run.unary_stream is not None:
            inner_us: Callable[[Any, Any], AsyncIterator[Any]] = run.unary_stream

            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                self._begin(info)
                exc: BaseException | None = None
                trail: _Trail | None = None
                try:
                    if tenant is None:
                        if audit_refusal:
                            await self._record(method, grant, None, request,
                                               grpc.StatusCode.PERMISSION_DENIED.name,
                                               detail=why or "")
                        async for item in inner_us(request, context):
                            yield item
                        return
                    info.tenant, info.grant = tenant, grant
                    info.key_id = grant.key_id if grant else None
                    trail, ctx = self._trail(info, request, context)
                    await self._admit(info, tenant, ctx)
                    try:
                        await self._check_size(request, ctx)
                        await self._reach(info, request, context, trail)
                        async for item in inner_us(request, ctx):
                            yield item
                    finally:
                        gate.release(tenant)
                except BaseException as e:
                    exc = e
                    raise
                finally:
                    self._end(info, context, exc)
                    if trail is not None:  # before the final status leaves
                        await trail.write(code_of(context, exc).name)

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=run.request_deserializer,
                response_serializer=run.response_serializer)
        return handler  # client-streaming kinds: none in this service


class _Trail:
    """One audited call's entry, written once: when the call aborts (before its status
    leaves) or when it ends (before its reply leaves)."""

    def __init__(self, owner: CallInterceptor, info: CallInfo, request: Any) -> None:
        self.owner, self.info, self.request = owner, info, request
        self.written = False

    async def write(self, outcome: str, detail: str = "") -> None:
        if self.written:
            return
        self.written = True
        info = self.info
        await self.owner._record(info.method, info.grant, info.tenant, self.request, outcome,
                                 records=info.records, detail=detail)


class _AuditedContext:
    """The call's context for an audited handler: an abort first writes the audit entry
    (gRPC sends the status at once, so the caller would otherwise see it before the log)."""

    def __init__(self, context: Any, trail: _Trail) -> None:
        self._context = context
        self._trail = trail

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def abort(self, code: grpc.StatusCode, details: str = "",
                    trailing_metadata: Any = ()) -> None:
        await self._trail.write(code.name)
        await self._context.abort(code, details, trailing_metadata)
