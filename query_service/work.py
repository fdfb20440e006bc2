"""Running the synchronous core off the event loop, and stopping it when the call ends.

The stores and the controller are synchronous and hold the GIL for most of
their work, so they run in thread pools of bounded size: one for reads
(Search, Read*), one for answers (a slow answer never takes a read's
thread), one single thread for writes (the embedded stores admit one writer).

Every piece of work gets a :class:`WorkToken`. The token fires when the gRPC
call is cancelled or its deadline passes; work that has not started is then
dropped, and an answer in progress stops at its next memory read or trace
step (:class:`GuardedReader` and the controller's ``on_step`` check it).

With ``MEMSTRATA_SERVICE_SCHEDULER=fair`` (the default) the read and answer
pools are fronted by a :class:`~query_service.scheduler.FairScheduler` each:
per-tenant queues, an adaptive concurrency limit and load shedding, so one
tenant's flood does not queue ahead of another tenant's calls. ``fifo`` hands
work to the pools directly, as before. A call the scheduler sheds is answered
late, as the tenant limits' refusals are (the same
:class:`~query_service.interceptors.refusals.RefusalPacer`, so one tenant's
refusals of both kinds share its pace): held until its retry-after on the
event loop, out of the in-flight gauge and the latency, so callers that retry
at once do not flood the server with calls that decode a request only to be
refused.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.roles import GraphSearcher, MemoryReader, MemoryStats
from memstrata.telemetry.context import bind
from query_service.calls import CALL, CallInfo
from query_service.interceptors.refusals import RefusalPacer
from query_service.scheduler import AdaptiveLimit, FairScheduler, Shed

if TYPE_CHECKING:
    from query_service.metrics import ServiceMetrics
    from query_service.settings import ServiceSettings

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

    def profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        self._token.check()
        return self._memory.profile(scope, entity)

    def entities(self, scope: Scope, *, everything: bool = False) -> list[EntitySummary]:
        self._token.check()
        return self._memory.entities(scope, everything=everything)

    def entity_profiles(self, scope: Scope, *,
                        everything: bool = False) -> list[EntityProfile]:
        self._token.check()
        return self._memory.entity_profiles(scope, everything=everything)

    def search_expanded(self, scope: Scope, queries: str | Sequence[str],
                        top_k: int | None = None, route: Any = None) -> Any:
        """:meth:`search` through the relation graph (the controller's route plan)."""
        self._token.check()
        if not isinstance(self._memory, GraphSearcher):  # a reader without the graph
            return self._memory.search(scope, queries, top_k=top_k), None
        return self._memory.search_expanded(scope, queries, top_k=top_k, route=route)


#: A call cancelled this close to its deadline is counted as past it: the server's clock
#: for the deadline starts when the call arrives, after the client's, so a client that
#: gives up at its deadline still shows a little time left here (more on a busy machine).
DEADLINE_SLACK_S = 0.1


def call_end_reason(context: Any) -> str:
    """Why a call's task was cancelled: its deadline passed, or the client went away."""
    remaining = context.time_remaining() if context is not None else None
    return ("deadline" if remaining is not None and remaining <= DEADLINE_SLACK_S
            else "cancelled")


class Pools:
    """The three thread pools and the bridge from a gRPC call to a thread."""

    def __init__(self, read_threads: int, answer_threads: int,
                 on_abandoned: Callable[[str, str], None] | None = None, *,
                 on_queue_wait: Callable[[str, str | None, float], None] | None = None,
                 pacer: RefusalPacer | None = None,
                 rate_of: Callable[[str], float] | None = None,
                 on_held: Callable[[str, int], None] | None = None) -> None:
        """``pacer``: holds shed calls (None: answered at once); ``rate_of``: a tenant's
        rate limit (its refusals come no faster); ``on_held``: (method, -1 / +1) as a
        shed call leaves and re-enters the in-flight count for its hold."""
        self.read = ThreadPoolExecutor(read_threads, thread_name_prefix="memstrata-read")
        self.answer = ThreadPoolExecutor(answer_threads, thread_name_prefix="memstrata-answer")
        self.write = ThreadPoolExecutor(1, thread_name_prefix="memstrata-write")
        self.on_abandoned = on_abandoned
        #: (method, tenant, seconds from the call asking to the work starting in a thread)
        self.on_queue_wait = on_queue_wait
        self.pacer = pacer
        self.rate_of: Callable[[str], float] = rate_of or (lambda tenant: math.inf)
        self.on_held = on_held
        #: The fair scheduler in front of a pool (by pool); a pool without one is FIFO.
        self.schedulers: dict[ThreadPoolExecutor, FairScheduler] = {}

    async def run(self, pool: ThreadPoolExecutor, context: Any,
                  fn: Callable[[WorkToken], T], *, method: str = "",
                  token: WorkToken | None = None) -> T:
        """Run ``fn(token)`` in ``pool``; cancel the token when the call goes away.

        A pool with a fair scheduler may refuse the call with :class:`Shed`; it is
        held as the pacer says, and what remains of its ``retry-after-ms`` hint is
        then set in the call's trailing metadata.
        """
        if token is None:
            token = WorkToken(context.time_remaining() if context is not None else None)
        work_token = token
        info = CALL.get()
        tenant = info.tenant if info is not None else None
        method = method or (info.method if info is not None else "")
        asked = time.monotonic()

        def guarded() -> T:
            if self.on_queue_wait is not None:
                self.on_queue_wait(method, tenant, time.monotonic() - asked)
            try:
                work_token.check()  # queued past the deadline, or cancelled while waiting
                return fn(work_token)
            except WorkCancelled as exc:
                if self.on_abandoned is not None:
                    self.on_abandoned(method, exc.reason)
                raise

        run = bind(guarded)  # tracing on: the call's span is the work's parent
        scheduler = self.schedulers.get(pool)
        try:
            if scheduler is None:
                return await asyncio.get_running_loop().run_in_executor(pool, run)
            return await scheduler.run(tenant or "-", method, work_token.deadline,
                                       lambda: asyncio.wrap_future(pool.submit(run)))
        except asyncio.CancelledError:
            work_token.cancel(call_end_reason(context))
            raise
        except Shed as exc:
            shed = await self._hold(exc, info, tenant or "-", method, context)
            if context is not None:
                context.set_trailing_metadata(
                    (("retry-after-ms", str(max(1, round(shed.retry_after_s * 1000)))),))
            raise shed from None

    async def _hold(self, shed: Shed, info: CallInfo | None, tenant: str, method: str,
                    context: Any) -> Shed:
        """Hold a shed call as the pacer says; the refusal to answer after it.

        As for the limits' refusals (``query_service.interceptors.call``), the hold
        is left out of the call's latency and of the calls in flight.
        """
        if self.pacer is None:
            return shed
        remaining = context.time_remaining() if context is not None else None
        began = time.perf_counter()
        if self.on_held is not None:
            self.on_held(method, -1)
        try:
            hint_s = await self.pacer.refuse_late(tenant, shed.retry_after_s,
                                                  self.rate_of(tenant), remaining)
        finally:
            if self.on_held is not None:
                self.on_held(method, 1)
            if info is not None:
                info.started += time.perf_counter() - began
        return shed.after_hold(hint_s)

    def shutdown(self) -> None:
        for pool in (self.read, self.answer, self.write):
            pool.shutdown(wait=False, cancel_futures=True)


class _PoolObserver:
    """A scheduler's reports as the service's metrics (tenant label per the setting)."""

    def __init__(self, metrics: ServiceMetrics, pool: str) -> None:
        self.metrics, self.pool = metrics, pool
        # Looked up once: queued() runs twice per call on the event loop.
        self._queued = metrics.queued.labels(pool=pool)
        self._limit = metrics.concurrency_limit.labels(pool=pool)

    def shed(self, method: str, tenant: str, reason: str) -> None:
        m = self.metrics
        m.shed.labels(method=method, reason=reason, **m._t(tenant)).inc()

    def limit(self, value: int) -> None:
        self._limit.set(value)

    def queued(self, value: int) -> None:
        self._queued.set(value)


def _queue_wait_observer(metrics: ServiceMetrics) -> Callable[[str, str | None, float], None]:
    """Records a call's queue wait; the histogram child per label set found once.

    Keyed by the labels the child has: without the tenant label every tenant
    shares one child per method, so the cache holds one entry per method.
    """
    children: dict[tuple[str, str | None], Any] = {}
    by_tenant = metrics.tenant_label

    def observe(method: str, tenant: str | None, seconds: float) -> None:
        key = (method, tenant if by_tenant else None)
        child = children.get(key)
        if child is None:
            child = children[key] = metrics.queue_wait.labels(
                method=method, **metrics._t(tenant))
        child.observe(seconds)

    return observe


def build_pools(settings: ServiceSettings, metrics: ServiceMetrics,
                weight_of: Callable[[str], float], *, pacer: RefusalPacer | None = None,
                rate_of: Callable[[str], float] | None = None) -> Pools:
    """The service's pools, with fair schedulers unless ``scheduler`` is ``fifo``.

    ``pacer`` and ``rate_of``: how a shed call is held (the service passes the pacer
    of the limits' refusals and the tenant's rate limit); None: answered at once.
    """
    fair = settings.scheduler == "fair"
    spare = settings.spare_slots if fair else 0

    def ceiling(threads: int) -> int:
        """The limit's ceiling: the pool's threads less the spare ones (at least 1)."""
        return settings.limit_max or max(1, threads - spare)

    def threads_of(threads: int) -> int:
        """The configured threads, or more where the ceiling plus the spare slots need
        them (so no call the scheduler starts waits in the pool's own queue)."""
        return max(threads, ceiling(threads) + spare) if spare else threads

    pools = Pools(threads_of(settings.read_threads), threads_of(settings.answer_threads),
                  on_abandoned=lambda method, reason: metrics.abandoned.labels(
                      method=method, reason=reason).inc(),
                  on_queue_wait=_queue_wait_observer(metrics), pacer=pacer, rate_of=rate_of,
                  on_held=lambda method, n: metrics.in_flight.labels(method=method).inc(n))
    if fair:
        for name, pool, threads in (("read", pools.read, settings.read_threads),
                                    ("answer", pools.answer, settings.answer_threads)):
            top = ceiling(threads)
            low = min(settings.limit_min, top)
            pools.schedulers[pool] = FairScheduler(
                AdaptiveLimit(top, low, top, tolerance=settings.limit_tolerance),
                weight_of=weight_of, max_wait_s=settings.queue_max_wait_s,
                queue_max=settings.queue_max, observer=_PoolObserver(metrics, name), name=name,
                share_window_s=settings.share_window_s, spare_slots=spare)
    return pools
