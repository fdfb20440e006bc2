"""Message size limits: the transport's, set explicitly, and the service's, which names the field.

gRPC refuses a message over its receive limit before any handler runs, with
RESOURCE_EXHAUSTED and a core message ("Received message larger than max
(N vs. M)") that names no field. So the transport limit sits a little above
the service's own (``MEMSTRATA_SERVICE_MAX_MESSAGE_BYTES``): a request between
the two reaches :class:`SizeInterceptor`, which answers INVALID_ARGUMENT naming
the request's largest field and the limit; only a request beyond the
transport limit gets gRPC's own answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

#: Headroom of the transport over the service limit: an eighth, at least 64 KiB.
MIN_HEADROOM = 64 * 1024


def transport_limit(max_message_bytes: int) -> int:
    """The transport's receive and send limit for a service limit of ``max_message_bytes``."""
    return max_message_bytes + max(MIN_HEADROOM, max_message_bytes // 8)


def channel_options(max_message_bytes: int) -> list[tuple[str, Any]]:
    """``grpc.aio.server(options=...)`` entries that set both directions explicitly."""
    limit = transport_limit(max_message_bytes)
    return [("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit)]


def too_large(request: Any, limit: int) -> str | None:
    """Why ``request`` is over ``limit`` bytes (its largest field named), or None."""
    size = request.ByteSize()
    if size <= limit:
        return None
    fields = []
    for desc, value in request.ListFields():
        rest = type(request)()
        rest.CopyFrom(request)
        rest.ClearField(desc.name)
        n = size - rest.ByteSize()  # the field's share of the encoded request
        many = hasattr(value, "__len__") and not isinstance(value, (str, bytes))
        fields.append((n, f"{desc.name} ({len(value)} items)" if many else desc.name))
    biggest = max(fields, default=(0, "request"))
    return (f"{biggest[1].split(' ')[0]}: request is {size} bytes (mostly {biggest[1]}: "
            f"{biggest[0]} bytes), limit is {limit} bytes "
            f"(MEMSTRATA_SERVICE_MAX_MESSAGE_BYTES); split it into smaller requests")


class SizeInterceptor(grpc.aio.ServerInterceptor):
    """INVALID_ARGUMENT for a request over the service limit, naming its largest field."""

    def __init__(self, max_message_bytes: int) -> None:
        self.limit = max_message_bytes

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails],
                                     Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith("/grpc."):
            return handler
        limit = self.limit
        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            async def unary(request: Any, context: Any) -> Any:
                why = too_large(request, limit)
                if why is not None:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
                return await inner_uu(request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        if handler.unary_stream is not None:
            inner_us = handler.unary_stream

            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                why = too_large(request, limit)
                if why is not None:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
                async for item in inner_us(request, context):
                    yield item

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        return handler
