"""Typed errors for the failures a caller can act on, mapped from gRPC status codes."""

from __future__ import annotations

import grpc

from memstrata.contract import QueryError, SessionNotFound
from memstrata.profile_records import ProfileNotFound


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


class Unavailable(RemoteError):
    """UNAVAILABLE: nothing was done and a retry may succeed (a store down, a full data
    volume, the stream worker behind); ``retry_after_s`` when the server says."""

    def __init__(self, code: grpc.StatusCode, details: str,
                 retry_after_s: float | None) -> None:
        super().__init__(code, details)
        self.retry_after_s = retry_after_s


class InvalidRequest(RemoteError, QueryError):
    """INVALID_ARGUMENT; the message names the field and the limit (also a QueryError)."""


class RemoteSessionNotFound(SessionNotFound):
    """NOT_FOUND for a session (a SessionNotFound, as the local memory raises)."""


class RemoteProfileNotFound(ProfileNotFound):
    """NOT_FOUND for a profile (a ProfileNotFound, as the local memory raises)."""


def from_rpc_error(exc: grpc.RpcError) -> Exception:
    code: grpc.StatusCode = exc.code()  # type: ignore[attr-defined]
    details: str = exc.details() or ""  # type: ignore[attr-defined]
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return Unauthenticated(code, details)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return RateLimited(code, details, _retry_after_s(exc))
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(code, details, _retry_after_s(exc))
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequest(code, details)
    if code == grpc.StatusCode.NOT_FOUND:
        return RemoteSessionNotFound(details)
    return RemoteError(code, details)


def _retry_after_s(exc: grpc.RpcError) -> float | None:
    """The server's ``retry-after-ms`` hint (trailing metadata), in seconds."""
    try:
        trailing = exc.trailing_metadata() or ()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - an error raised before the call (no metadata)
        return None
    for k, v in trailing:
        if k == "retry-after-ms":
            try:
                return int(v) / 1000
            except ValueError:
                return None
    return None
