"""A handler that refuses a call without running it, of the refused handler's kind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc


def denying_handler(handler: grpc.RpcMethodHandler, code: grpc.StatusCode,
                    details: str) -> grpc.RpcMethodHandler:
    """A handler of the same kind that answers ``code`` without running the call."""

    async def deny_unary(request: Any, context: Any) -> Any:
        await context.abort(code, details)

    async def deny_stream(request: Any, context: Any) -> AsyncIterator[Any]:
        await context.abort(code, details)
        yield  # pragma: no cover - abort raises

    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(
            deny_stream, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)
    return grpc.unary_unary_rpc_method_handler(
        deny_unary, request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer)
