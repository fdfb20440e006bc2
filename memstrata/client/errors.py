"""Typed errors for the failures a caller can act on, mapped from gRPC status codes."""

from __future__ import annotations

import grpc

from memstrata.contract import QueryError, SessionNotFound


class RemoteError(RuntimeError):
    """The service answered with an error status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class Unauthenticated(RemoteError):
    """No key, a wrong key or a revoked key."""


class RateLimited(RemoteError):
    """A rate, concurrency or budget limit; ``retry_after_s`` when the server says."""

    def __init__(self, code: grpc.StatusCode, details: str,
                 retry_after_s: float | None) -> None:
        super().__init__(code, details)
        self.retry_after_s = retry_after_s


class InvalidRequest(RemoteError, QueryError):
    """INVALID_ARGUMENT; the message names the field and the limit (also a QueryError)."""


class RemoteSessionNotFound(SessionNotFound):
    """NOT_FOUND for a session (a SessionNotFound, as the local memory raises)."""


def from_rpc_error(exc: grpc.RpcError) -> Exception:
    code: grpc.StatusCode = exc.code()  # type: ignore[attr-defined]
    details: str = exc.details() or ""  # type: ignore[attr-defined]
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return Unauthenticated(code, details)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        retry = None
        for k, v in exc.trailing_metadata() or ():  # type: ignore[attr-defined]
            if k == "retry-after-ms":
                retry = int(v) / 1000
        return RateLimited(code, details, retry)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequest(code, details)
    if code == grpc.StatusCode.NOT_FOUND:
        return RemoteSessionNotFound(details)
    return RemoteError(code, details)
