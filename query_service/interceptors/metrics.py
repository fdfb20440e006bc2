"""A call's status code, for the latency and error metrics of every call."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc


def code_of(context: Any, exc: BaseException | None) -> grpc.StatusCode:
    """The code the call ended with: the context's, else from the exception that ended it."""
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(exc, asyncio.CancelledError):
        remaining = context.time_remaining()
        return (grpc.StatusCode.DEADLINE_EXCEEDED if remaining is not None and remaining <= 0
                else grpc.StatusCode.CANCELLED)
    return grpc.StatusCode.OK if exc is None else grpc.StatusCode.UNKNOWN
