"""Every call carries an API key; its tenant is the only tenant the call can touch.

The key comes in metadata ``x-api-key`` (or ``authorization: Bearer <key>``).
A client may also send ``x-memstrata-tenant`` to say which tenant it expects:
a mismatch is refused (PERMISSION_DENIED), it never selects a tenant. Health
checks and reflection need no key. Keys are never logged.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc

from query_service.calls import current_call
from query_service.interceptors.wrap import denying_handler, wrap_handler
from query_service.keys import KeyRing

log = logging.getLogger(__name__)

KEY_HEADER = "x-api-key"
TENANT_HEADER = "x-memstrata-tenant"
OPEN_PREFIXES = ("/grpc.health.", "/grpc.reflection.")

NO_KEY = "missing API key: send it in metadata 'x-api-key' (or 'authorization: Bearer ...')"
BAD_KEY = "invalid or revoked API key"


def key_from_metadata(metadata: Any) -> str | None:
    for k, v in metadata or ():
        if k == KEY_HEADER and v:
            return str(v)
        if k == "authorization" and str(v).lower().startswith("bearer "):
            return str(v)[7:].strip() or None
    return None


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Turns the API key into the call's tenant, or answers UNAUTHENTICATED."""

    def __init__(self, keys: KeyRing) -> None:
        self.keys = keys
        # Deny handlers are built once per kind and reason (the anchor's pattern).
        self._denials: dict[tuple[bool, grpc.StatusCode, str], grpc.RpcMethodHandler] = {}

    def _deny(self, handler: grpc.RpcMethodHandler, code: grpc.StatusCode,
              details: str) -> grpc.RpcMethodHandler:
        key = (handler.response_streaming, code, details)
        if key not in self._denials:
            self._denials[key] = denying_handler(handler, code, details)
        return self._denials[key]

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails],
                                     Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(OPEN_PREFIXES):
            return handler
        metadata = handler_call_details.invocation_metadata
        key = key_from_metadata(metadata)
        if key is None:
            return self._deny(handler, grpc.StatusCode.UNAUTHENTICATED, NO_KEY)
        tenant = self.keys.tenant_for(key)
        if tenant is None:
            log.info("refused a call to %s: invalid or revoked key", method)
            return self._deny(handler, grpc.StatusCode.UNAUTHENTICATED, BAD_KEY)
        # An empty claim states nothing: the key's tenant applies, as with no header.
        claimed = next((str(v) for k, v in metadata or () if k == TENANT_HEADER), None)
        if claimed and claimed != tenant:
            return self._deny(handler, grpc.StatusCode.PERMISSION_DENIED,
                              f"{TENANT_HEADER}: this API key does not belong to tenant "
                              f"{claimed!r}")

        @asynccontextmanager
        async def as_tenant(context: Any) -> AsyncIterator[None]:
            info = current_call(method)
            info.tenant = tenant
            yield

        return wrap_handler(handler, as_tenant)  # type: ignore[return-value]
