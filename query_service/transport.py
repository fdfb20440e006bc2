"""Message size limits: the transport's, set explicitly, and the service's, which names the field.

gRPC refuses a message over its receive limit before any handler runs, with
RESOURCE_EXHAUSTED and a core message ("Received message larger than max
(N vs. M)") that names no field. So the transport limit sits a little above
the service's own (``MEMSTRATA_SERVICE_MAX_MESSAGE_BYTES``): a request between
the two reaches the service's interceptor
(:class:`~query_service.interceptors.call.CallInterceptor`), which answers
INVALID_ARGUMENT naming the request's largest field and the limit; only a request beyond the
transport limit gets gRPC's own answer.
"""

from __future__ import annotations

from typing import Any


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
