"""Running the synchronous core off the event loop, and stopping it when the call ends.

The stores and the controller are synchronous and hold the GIL for most of
their work, so they run in thread pools of bounded size: one for reads
(Search, Read*), one for answers (a slow answer never takes a read's
thread), one single thread for writes (the embedded stores admit one writer).

Every piece of work gets a :class:`WorkToken`. The token fires when the gRPC
call is cancelled or its deadline passes; work that has not started is then
dropped, and an answer in progress stops at its next memory read or trace
step (:class:`GuardedReader` and the controller's ``on_step`` check it).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.roles import MemoryReader, MemoryStats

T = TypeVar("T")


class WorkCancelled(Exception):
    """The call this work was for is gone (cancelled, or past its deadline)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WorkToken:
    """Cancellation flag and deadline of one call's work."""

    def __init__(self, timeout_s: float | None = None) -> None:
        self._event = threading.Event()
        self.reason = ""
        self.deadline = time.monotonic() + timeout_s if timeout_s is not None else None

    def cancel(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.cancel("deadline")
        if self._event.is_set():
            raise WorkCancelled(self.reason)


class GuardedReader:
    """A MemoryReader that checks the call's token before every read."""

    def __init__(self, memory: MemoryReader, token: WorkToken) -> None:
        self._memory = memory
        self._token = token

    def search(self, scope: Scope, queries: str | Sequence[str],
               top_k: int | None = None) -> list[SessionHit]:
        self._token.check()
        return self._memory.search(scope, queries, top_k=top_k)

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        self._token.check()
        return self._memory.sessions(scope)

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        self._token.check()
        return self._memory.session(scope, session_id)

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        self._token.check()
        return self._memory.l0(scope, session_id)

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        self._token.check()
        return self._memory.facts(scope, session_id)

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        self._token.check()
        return self._memory.notes(scope, session_id)

    def raw(self, scope: Scope, session_id: str,
            turns: Iterable[int] | None = None) -> list[Turn]:
        self._token.check()
        return self._memory.raw(scope, session_id, turns)

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        self._token.check()
        return self._memory.stats(tenant_id)


def call_end_reason(context: Any) -> str:
    """Why a call's task was cancelled: its deadline passed, or the client went away."""
    remaining = context.time_remaining() if context is not None else None
    return "deadline" if remaining is not None and remaining <= 0.001 else "cancelled"


class Pools:
    """The three thread pools and the bridge from a gRPC call to a thread."""

    def __init__(self, read_threads: int, answer_threads: int,
                 on_abandoned: Callable[[str, str], None] | None = None) -> None:
        self.read = ThreadPoolExecutor(read_threads, thread_name_prefix="memstrata-read")
        self.answer = ThreadPoolExecutor(answer_threads, thread_name_prefix="memstrata-answer")
        self.write = ThreadPoolExecutor(1, thread_name_prefix="memstrata-write")
        self.on_abandoned = on_abandoned

    async def run(self, pool: ThreadPoolExecutor, context: Any,
                  fn: Callable[[WorkToken], T], *, method: str = "",
                  token: WorkToken | None = None) -> T:
        """Run ``fn(token)`` in ``pool``; cancel the token when the call goes away."""
        if token is None:
            token = WorkToken(context.time_remaining() if context is not None else None)
        work_token = token

        def guarded() -> T:
            try:
                work_token.check()  # queued past the deadline, or cancelled while waiting
                return fn(work_token)
            except WorkCancelled as exc:
                if self.on_abandoned is not None:
                    self.on_abandoned(method, exc.reason)
                raise

        future = asyncio.get_running_loop().run_in_executor(pool, guarded)
        try:
            return await future
        except asyncio.CancelledError:
            work_token.cancel(call_end_reason(context))
            raise

    def shutdown(self) -> None:
        for pool in (self.read, self.answer, self.write):
            pool.shutdown(wait=False, cancel_futures=True)
