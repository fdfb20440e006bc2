"""Rebuild a method handler around its behaviour, for unary and server-streaming RPCs.

grpc.aio interceptors see the handler before the call runs; to act around the
call itself (time it, hold a concurrency slot, set the tenant) the behaviour
is wrapped and the handler rebuilt with the matching ``*_rpc_method_handler``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import grpc

Around = Callable[[Any], AbstractAsyncContextManager[None]]


def wrap_handler(handler: grpc.RpcMethodHandler | None,
                 around: Around) -> grpc.RpcMethodHandler | None:
    """The same handler whose behaviour runs inside ``around(context)``."""
    if handler is None:
        return None
    if handler.unary_unary is not None:
        inner_uu: Callable[[Any, Any], Awaitable[Any]] = handler.unary_unary

        async def unary(request: Any, context: Any) -> Any:
            async with around(context):
                return await inner_uu(request, context)

        return grpc.unary_unary_rpc_method_handler(
            unary, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)
    if handler.unary_stream is not None:
        inner_us: Callable[[Any, Any], AsyncIterator[Any]] = handler.unary_stream

        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            async with around(context):
                async for item in inner_us(request, context):
                    yield item

        return grpc.unary_stream_rpc_method_handler(
            stream, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)
    return handler  # client-streaming kinds: none in this service


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
