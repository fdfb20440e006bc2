"""Which store errors are an outage, how store calls are retried, and the outage itself.

A store that cannot be reached is retried with backoff and, if it stays
down, stops the worker (:class:`StoreUnavailable`, carrying what may still be
committed, which :func:`settle_outage` commits before the worker exits); any
other error is a refusal of the data, which the processor turns into a dead
letter. Kept apart from the processor so the policy reads
in one place and the worker's Faust wiring can name the outage without it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    retry_if_exception_type,
    wait_exponential,
)

from streams import topics
from streams.outbox import Outbox
from streams.records import Record
from streams.settings import StreamSettings

__all__ = ["TRANSIENT", "StoreUnavailable", "is_transient", "retried", "settle_outage"]

log = logging.getLogger("memstrata.stream")
T = TypeVar("T")

#: Errors worth retrying as they are (a store or the network hiccuped).
TRANSIENT: tuple[type[BaseException], ...] = (OSError, ConnectionError, TimeoutError)
#: The same kind of error as the store clients raise it, by module and class name (the
#: clients are optional extras, so they are not imported here): httpx under the Qdrant
#: client, opensearch-py's own ConnectionError and ConnectionTimeout.
_TRANSIENT_NAMES = {("httpx", "TransportError"), ("opensearchpy.exceptions", "ConnectionError")}


def is_transient(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the store is unreachable (retry; stop if it lasts).

    Anything else is a refusal of this data. Wrapped errors count by their
    cause (the Qdrant client wraps httpx's in ResponseHandlingException).
    """
    for _ in range(8):
        if exc is None:
            return False
        if isinstance(exc, TRANSIENT) or any(
                (cls.__module__, cls.__qualname__) in _TRANSIENT_NAMES
                for cls in type(exc).__mro__):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class StoreUnavailable(RuntimeError):
    """The stores stayed unreachable through every retry: the worker has to stop.

    ``outbox`` is what the records handled before the outage ask to publish,
    and ``done`` maps a partition to the offset below which every record of the
    batch is handled (stored or dead-lettered), so those offsets may be
    committed once ``outbox`` is sent; the rest is read again after a restart.
    """

    def __init__(self, message: str, outbox: Outbox | None = None,
                 done: dict[int, int] | None = None) -> None:
        super().__init__(message)
        self.outbox = outbox or Outbox()
        self.done = done or {}

    def after(self, records: Sequence[Record], handled: Sequence[bool],
              out: Outbox) -> "StoreUnavailable":
        """This outage, with the committable prefix of ``records`` and its notices."""
        done: dict[int, int] = {}
        blocked: set[int] = set()
        for rec, ok in zip(records, handled, strict=True):
            if rec.partition in blocked:
                continue
            if ok:
                done[rec.partition] = rec.offset + 1
            else:
                blocked.add(rec.partition)
        dead = [d for d in out.dead if d.offset < done.get(d.partition, -1)]
        return StoreUnavailable(str(self), Outbox(l0=list(out.l0), dead=dead), done)


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome is not None else None
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    log.warning("store write failed (%s: %s), attempt %d, retry in %.1fs",
                type(exc).__name__, exc, state.attempt_number, wait)


async def retried(call: Callable[[], Awaitable[T]], lim: StreamSettings, *,
                  retry_any: bool = False) -> T:
    """``call()``, retried with backoff (bounded).

    Connection and timeout errors are tried ``store_attempts`` times, then
    raise :class:`StoreUnavailable` (the worker stops). Other errors are
    tried ``store_refused_attempts`` times with ``retry_any`` (a session
    that may be poison), else raised at once.
    """
    def stop(state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome is not None else None
        limit = lim.store_attempts if is_transient(exc) else lim.store_refused_attempts
        return state.attempt_number >= limit

    retrying = AsyncRetrying(
        stop=stop,
        wait=wait_exponential(multiplier=lim.store_backoff_s, max=lim.store_backoff_max_s),
        retry=retry_if_exception_type(Exception) if retry_any
        else retry_if_exception(is_transient),
        before_sleep=_log_retry, reraise=True)
    try:
        async for attempt in retrying:
            with attempt:
                return await call()
    except Exception as exc:
        if is_transient(exc):
            raise StoreUnavailable(f"store unreachable after {lim.store_attempts} "
                                   f"attempts: {type(exc).__name__}: {exc}") from exc
        raise
    raise AssertionError("unreachable: tenacity returns or raises")  # pragma: no cover


async def settle_outage(down: StoreUnavailable, events: Sequence[Any], *,
                        deliver: Callable[[Outbox], Awaitable[None]],
                        ack: Callable[[Any], Awaitable[Any]] | None,
                        commit: Callable[[], Awaitable[Any]],
                        turns_topic: str = topics.TURNS) -> None:
    """Before stopping on an unreachable store: commit what the stores hold.

    The notices of the records handled before the outage are sent, those
    records (``down.done``: per partition, the offset below which all are
    handled) are acknowledged, and the acknowledged offsets committed. The
    rest of the batch is left unacknowledged and read again after a restart.
    """
    await deliver(down.outbox)
    for e in events:
        m = e.message
        if ack is not None and m.topic == turns_topic \
                and m.offset < down.done.get(m.partition, -1):
            await ack(e)
    for _ in range(2):  # the first may only wait for a periodic commit already in flight
        await commit()
