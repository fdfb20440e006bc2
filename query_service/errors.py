"""Input checks and the mapping from failures to gRPC status codes.

Every refusal names the field and the limit, so a caller can fix the request
without reading server logs; nothing of the request's content is logged.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar

import grpc

from memstrata.config import ConfigError
from memstrata.executor import ExecutorBusy
from memstrata.layers.lazy import SessionNotFound
from memstrata.limits import TopKRefused
from memstrata.model import MAX_ID_LEN, is_identifier
from memstrata.profile_records import ProfileNotFound
from memstrata.retrieval.hybrid import QueryError
from memstrata.store.outage import store_failure
from memstrata.store.types import StoreError
from query_service.publish import IntakePaused, ShareTooLarge, StoreFailed
from query_service.scheduler import Shed
from query_service.ledger import LedgerUnavailable
from query_service.work import WorkCancelled
from query_service.writes import ChangedMessage, DeleteIncomplete

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The ``retry-after-ms`` hint (trailing metadata, as for RESOURCE_EXHAUSTED) of a call
#: that failed because the data volume is full (space must be freed first) or a store
#: is out of reach.
RETRY_AFTER_FULL_S = 30.0
RETRY_AFTER_DOWN_S = 5.0


class InvalidArgument(ValueError):
    """A request field breaks a limit; the message starts with the field's name."""


class NotFound(LookupError):
    """The tenant has no such user or session."""


class Exhausted(RuntimeError):
    """A tenant budget is spent and its policy says to refuse."""


def check_id(field: str, value: str, *, required: bool = True) -> str:
    if not value:
        if required:
            raise InvalidArgument(f"{field}: required")
        return value
    if len(value) > MAX_ID_LEN:
        raise InvalidArgument(f"{field}: {len(value)} characters, limit is {MAX_ID_LEN}")
    if not is_identifier(value):
        raise InvalidArgument(f"{field}: only letters, digits and . _ : @ / + - are allowed "
                              f"(no spaces), limit {MAX_ID_LEN} characters")
    return value


def check_text(field: str, value: str, limit: int, *, required: bool = True) -> str:
    if required and not value.strip():
        raise InvalidArgument(f"{field}: required (empty)")
    if len(value) > limit:
        raise InvalidArgument(f"{field}: {len(value)} characters, limit is {limit}")
    return value


def check_range(field: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise InvalidArgument(f"{field}: must be between {low} and {high}, got {value}")
    return value


def status_for(exc: BaseException) -> tuple[grpc.StatusCode, str] | None:
    """The status a known failure maps to; None for an unexpected one."""
    if isinstance(exc, (InvalidArgument, QueryError, ChangedMessage, TopKRefused, ShareTooLarge)):
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, ConfigError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, SessionNotFound):
        return grpc.StatusCode.NOT_FOUND, str(exc.args[0] if exc.args else exc)
    if isinstance(exc, ProfileNotFound):
        return grpc.StatusCode.NOT_FOUND, str(exc.args[0] if exc.args else exc)
    if isinstance(exc, NotFound):
        return grpc.StatusCode.NOT_FOUND, str(exc)
    if isinstance(exc, (Exhausted, ExecutorBusy, Shed)):  # ExecutorBusy: the workers' queues
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)
    if isinstance(exc, (DeleteIncomplete, StoreFailed, LedgerUnavailable, IntakePaused)):
        return grpc.StatusCode.UNAVAILABLE, str(exc)
    if isinstance(exc, StoreError):  # the backend's message (paths, SQL) stays in the log
        if store_failure(exc) == "full":
            return grpc.StatusCode.UNAVAILABLE, (
                "the service's data volume is full: it cannot write until space is freed; "
                "retry later")
        return (grpc.StatusCode.UNAVAILABLE,
                "a store failed (details in the service log): retry later")
    if isinstance(exc, NotImplementedError):
        return grpc.StatusCode.UNIMPLEMENTED, str(exc) or "not supported by this memory"
    if isinstance(exc, WorkCancelled):
        code = (grpc.StatusCode.DEADLINE_EXCEEDED if exc.reason == "deadline"
                else grpc.StatusCode.CANCELLED)
        return code, f"stopped: {exc.reason}"
    return None


def rpc_errors(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Abort a unary call with the status its failure maps to."""

    @wraps(fn)
    async def unary(self: Any, request: Any, context: Any) -> T:
        try:
            return await fn(self, request, context)
        except (grpc.aio.AbortError, grpc.RpcError):
            raise
        except Exception as exc:
            await _abort(context, fn.__name__, exc)
            raise  # unreachable: abort raises

    return unary


def rpc_stream_errors(fn: Callable[..., AsyncIterator[T]]) -> Callable[..., AsyncIterator[T]]:
    """Abort a server-streaming call with the status its failure maps to."""

    @wraps(fn)
    async def stream(self: Any, request: Any, context: Any) -> AsyncIterator[T]:
        try:
            async for item in fn(self, request, context):
                yield item
        except (grpc.aio.AbortError, grpc.RpcError):
            raise
        except Exception as exc:  # noqa: BLE001
            await _abort(context, fn.__name__, exc)

    return stream


def retry_after_s(exc: BaseException) -> float | None:
    """The wait to suggest for a failure a retry can fix (a full disk, a store down)."""
    if isinstance(exc, StoreFailed):
        return RETRY_AFTER_FULL_S
    if isinstance(exc, IntakePaused):  # the embedded broker is being recycled
        return exc.retry_after_s
    if isinstance(exc, LedgerUnavailable):  # the default MEMSTRATA_SERVICE_LEDGER_RETRY_S
        return RETRY_AFTER_DOWN_S
    if isinstance(exc, (StoreError, DeleteIncomplete)):
        return RETRY_AFTER_FULL_S if store_failure(exc) == "full" else RETRY_AFTER_DOWN_S
    return None


async def _abort(context: Any, method: str, exc: Exception) -> None:
    mapped = status_for(exc)
    retry = retry_after_s(exc)
    if retry is not None:
        context.set_trailing_metadata((("retry-after-ms", str(round(retry * 1000))),))
    if isinstance(exc, StoreError):
        # The kind only: messages of store errors may quote ids and paths.
        log.warning("%s failed: a store failed (%s, %s)", method, type(exc).__name__,
                    store_failure(exc) or "other")
        log.debug("%s store failure", method, exc_info=exc)
    if mapped is None:
        # The type only: messages of store errors may quote content.
        log.error("%s failed with %s", method, type(exc).__name__)
        log.debug("%s failure", method, exc_info=exc)
        mapped = grpc.StatusCode.INTERNAL, f"internal error ({type(exc).__name__})"
    await context.abort(*mapped)
