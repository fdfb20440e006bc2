"""Fair shares of a thread pool between tenants, an adaptive concurrency limit, load shedding.

Without this, every call's work goes straight into the pool's FIFO queue, so
one tenant with 64 callers puts 64 calls in front of a quiet tenant's one
(measured: the quiet tenant's Search p99 went from 12.5 ms to 464 ms). Here
each pool's work waits in per-tenant queues instead, and the pool is handed
only as many calls as the concurrency limit allows:

* **Weighted fair queuing.** Each tenant has a virtual time: the seconds of
  pool time it has been given, divided by its weight (keys file, default 1).
  When a slot frees, the backlogged tenant with the smallest virtual time goes
  next; a tenant that was idle starts at the smallest virtual time of those
  waiting, so idling banks no credit. A quiet tenant therefore waits for about
  one slot to free, whatever the size of a flooding tenant's backlog. The cost
  charged at dispatch is the method's average service time, corrected to the
  measured time when the work ends.
* **A slot kept for the others** (optional, ``share_window_s`` > 0). While another
  tenant has sent a call within ``share_window_s``, no tenant holds every slot: one
  stays for the others. A
  quiet tenant's call then starts at once instead of waiting for a flooding
  tenant's running call to end (a Search is several ms of the GIL; that wait
  was most of its tail). Alone, a tenant uses every slot.
* **Spare slots** (optional, ``spare_slots`` > 0). Above the limit,
  a tenant with no call running may start one at once, in a slot no tenant with
  calls running can take. A flooding tenant always has calls running, so it
  keeps every slot of the limit, and a quiet tenant's call does not wait for
  one of them to end. The service keeps that many of each pool's threads for
  them (the limit's ceiling is the threads less the spare ones), so the quiet
  tenant's call shares the machine with fewer of the flood's calls. The cost
  is the flood's peak: alone it keeps the spare threads idle (measured on 2
  cores, 2 threads, query cache off: about 25% fewer Searches/s with 1 spare).
* **Adaptive concurrency limit** (:class:`AdaptiveLimit`): how many calls the
  pool works on at once, between a floor and a ceiling (by default the pool's
  thread count, so nothing waits in the pool's own FIFO queue), lowered when
  recent service times rise well above their long-run average and raised
  again while the limit is what holds calls back.
* **Load shedding.** A call whose estimated wait (the work served before it,
  in fair order, at the measured service time and the current limit) would
  take it past its deadline, or past ``max_wait_s``, is refused as it asks, with
  :class:`Shed` (RESOURCE_EXHAUSTED and a ``retry-after-ms`` hint on the wire,
  answered late like the tenant limits' refusals: :meth:`query_service.work.Pools.run`).
  The estimate of a flooding tenant counts its own backlog, a quiet tenant's
  does not, so the tenant that caused the queue is the one refused. When the
  queue holds ``queue_max`` calls, the newest call of the tenant with the
  largest backlog (per unit of weight) makes room.

Everything runs on one asyncio loop (no locks) and reads time from an
injectable clock; nothing here knows about gRPC, so it is unit-tested with a
fake clock and fake work.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

T = TypeVar("T")
Clock = Callable[[], float]

#: Why a call was refused (the ``reason`` label of ``memstrata_shed_calls_total``).
SHED_DEADLINE = "deadline"      # the estimated wait runs past the call's deadline
SHED_QUEUE_WAIT = "queue_wait"  # the estimated wait is over max_wait_s
SHED_QUEUE_FULL = "queue_full"  # the queue is full and this tenant has the largest backlog


class Shed(Exception):
    """The call was refused to protect the service; retry after ``retry_after_s``.

    ``why``: what the caller reads, before the retry hint the message ends with.
    """

    def __init__(self, reason: str, retry_after_s: float, why: str) -> None:
        super().__init__(f"{why}; retry in {max(1, round(retry_after_s * 1000))} ms")
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.why = why

    def after_hold(self, retry_after_s: float) -> Shed:
        """The same refusal, answered after a hold: only what remains of the wait."""
        return Shed(self.reason, retry_after_s, self.why)


class Observer(Protocol):
    """What a scheduler reports (the service turns it into metrics)."""

    def shed(self, method: str, tenant: str, reason: str) -> None: ...

    def limit(self, value: int) -> None: ...

    def queued(self, value: int) -> None: ...


class _Quiet:
    def shed(self, method: str, tenant: str, reason: str) -> None:
        pass

    def limit(self, value: int) -> None:
        pass

    def queued(self, value: int) -> None:
        pass


class _Ewma:
    """Exponentially weighted moving average over about ``window`` samples."""

    def __init__(self, window: float) -> None:
        self.alpha = 2.0 / (window + 1.0)
        self.value: float | None = None

    def add(self, x: float) -> float:
        self.value = x if self.value is None else self.value + self.alpha * (x - self.value)
        return self.value


class AdaptiveLimit:
    """A concurrency limit from measured latency: additive increase, multiplicative decrease.

    In the spirit of the gradient limiters (Netflix concurrency-limits), the
    signal is the ratio of recent service time (an average over about
    ``short_window`` calls) to the long-run average (about ``long_window``
    calls). Above ``tolerance``, the pool is being asked for more than it
    serves well (the cores are busy with other work, or more threads than
    cores contend for the GIL): the limit is multiplied by ``backoff``, at most
    once per recent service time, so one slow burst counts once. Otherwise,
    when the limit is what holds calls back (all its slots are busy), it grows
    by ``1 / limit`` per call: about one slot per round of calls. The long-run
    average follows a new normal, so a lasting change of level is accepted
    after a while and only sudden rises cut the limit. No maintained Python
    library implements this for asyncio servers (the PyPI packages found were
    0.x single-author releases), hence these few lines.
    """

    def __init__(self, initial: int, min_limit: int, max_limit: int, *,
                 tolerance: float = 2.0, backoff: float = 0.9, short_window: int = 10,
                 long_window: int = 500, clock: Clock = time.monotonic) -> None:
        if not 1 <= min_limit <= max_limit:
            raise ValueError(f"need 1 <= min_limit ({min_limit}) <= max_limit ({max_limit})")
        self.min_limit, self.max_limit = min_limit, max_limit
        self.tolerance, self.backoff = tolerance, backoff
        self._value = float(min(max(initial, min_limit), max_limit))
        self._short = _Ewma(short_window)
        self._long = _Ewma(long_window)
        self._clock = clock
        self._last_cut = -math.inf

    @property
    def value(self) -> int:
        """Calls the pool may work on at once."""
        return max(self.min_limit, int(self._value))

    def sample(self, rtt_s: float, in_flight: int) -> int:
        """Record one call's service time (``in_flight``: calls running when it started)."""
        short = self._short.add(rtt_s)
        long = self._long.add(rtt_s)
        now = self._clock()
        if short > self.tolerance * long:
            if now - self._last_cut >= short:
                self._value = max(float(self.min_limit), self._value * self.backoff)
                self._last_cut = now
        elif in_flight >= self.value:
            self._value = min(float(self.max_limit), self._value + 1.0 / self._value)
        return self.value


@dataclass(eq=False)
class _Ticket:
    tenant: str
    method: str
    enqueued: float
    #: Resolved with the cost charged when the ticket is handed a slot.
    future: asyncio.Future[float]


@dataclass
class _Tenant:
    weight: float
    vtime: float = 0.0
    queue: deque[_Ticket] = field(default_factory=deque)
    last_served: int = -1
    running: int = 0
    last_seen: float = -math.inf


class FairScheduler:
    """Per-tenant queues in front of one pool (see the module docstring)."""

    def __init__(self, limit: AdaptiveLimit, *, weight_of: Callable[[str], float] | None = None,
                 max_wait_s: float = 5.0, queue_max: int = 1000, clock: Clock = time.monotonic,
                 observer: Observer | None = None, name: str = "pool",
                 share_window_s: float = 0.0, spare_slots: int = 0) -> None:
        if spare_slots < 0:
            raise ValueError(f"spare_slots must be >= 0, got {spare_slots}")
        self.limiter = limit
        self.share_window_s = share_window_s
        self.spare_slots = spare_slots
        self.weight_of = weight_of or (lambda tenant: 1.0)
        self.max_wait_s = max_wait_s
        self.queue_max = queue_max
        self.clock = clock
        self.observer: Observer = observer or _Quiet()
        self.name = name
        self.in_flight = 0
        self.queued = 0
        self._tenants: dict[str, _Tenant] = {}
        self._backlog: dict[str, _Tenant] = {}  # the tenants with calls waiting
        self._virtual = 0.0  # virtual time of the last call handed a slot
        self._service: dict[str, _Ewma] = {}  # per method
        self._any = _Ewma(50)                 # all methods: the fallback estimate
        self._seq = itertools.count()
        self.observer.limit(self.limiter.value)

    # -- estimates -------------------------------------------------------------
    def service_time(self, method: str) -> float:
        """Average seconds of pool time for ``method`` (0 until something was measured)."""
        own = self._service.get(method)
        value = own.value if own is not None else None
        if value is None:
            value = self._any.value
        return value or 0.0

    def _tenant(self, name: str) -> _Tenant:
        t = self._tenants.get(name)
        weight = max(1e-6, float(self.weight_of(name)))
        if t is None:
            t = self._tenants[name] = _Tenant(weight=weight)
        t.weight = weight  # the keys file may have changed
        return t

    def _may_start(self, name: str, t: _Tenant) -> bool:
        """A free slot may go to ``t`` unless it would take the one kept for the others."""
        limit = self.limiter.value
        if self.in_flight >= limit:
            # A spare slot, above the limit: only for a tenant with nothing running,
            # so never for the one whose calls fill the limit.
            return t.running == 0 and self.in_flight < limit + self.spare_slots
        if self.share_window_s <= 0 or limit < 2 or t.running < limit - 1:
            return True
        since = self.clock() - self.share_window_s
        return not any(o.last_seen >= since for n, o in self._tenants.items() if n != name)

    def _floor(self) -> float:
        """The smallest virtual time of the backlogged tenants (system virtual time)."""
        return min((t.vtime for t in self._backlog.values()), default=self._virtual)

    def estimated_wait(self, tenant: str, method: str) -> float:
        """Seconds a call of ``tenant`` queued now would wait before it runs."""
        svc = self.service_time(method)
        if svc <= 0.0:
            return 0.0
        me = self._tenant(tenant)
        mine = len(me.queue) + 1  # this call is the last of its tenant's backlog
        ahead = len(me.queue)
        for name, other in self._backlog.items():
            if name != tenant:
                # In fair order, another tenant gets about weight-proportional turns
                # for each of this tenant's calls, but never more than it has queued.
                ahead += min(len(other.queue), math.ceil(mine * other.weight / me.weight))
        limit = self.limiter.value
        busy = 1 if self.in_flight >= limit else 0  # a slot must free first
        return (ahead + busy) * svc / limit

    # -- the call path -----------------------------------------------------------
    async def run(self, tenant: str, method: str, deadline: float | None,
                  start: Callable[[], asyncio.Future[T]]) -> T:
        """Wait for this tenant's turn, then ``start()`` the work and await it.

        ``deadline`` is on this scheduler's clock (None: none). The slot is held
        until the future ``start()`` returned is done, even when the caller is
        cancelled meanwhile (the work may still be running in its thread).
        """
        me = self._tenant(tenant)
        me.last_seen = self.clock()
        if self.queued or not self._may_start(tenant, me):
            charged = await self._wait_turn(tenant, method, deadline)
        else:
            charged = self._charge_start(me, method)
        return await self._dispatch(tenant, method, start, charged)

    async def _wait_turn(self, tenant: str, method: str, deadline: float | None) -> float:
        now = self.clock()
        wait = self.estimated_wait(tenant, method)
        svc = self.service_time(method)
        budget, reason = self.max_wait_s, SHED_QUEUE_WAIT
        if deadline is not None and deadline - now - svc < budget:
            budget, reason = deadline - now - svc, SHED_DEADLINE
        if wait > budget:
            self.observer.shed(method, tenant, reason)
            retry = max(svc, wait - max(0.0, budget))
            raise Shed(reason, retry, (
                f"tenant {tenant}: the server is busy; {method} would wait about "
                f"{wait * 1000:.0f} ms, past its "
                f"{'deadline' if reason == SHED_DEADLINE else 'queue limit'}"))
        if self.queued >= self.queue_max:
            self._make_room(tenant, method)
        me = self._tenant(tenant)
        if not me.queue:  # back from idle: no credit for the time it was away
            me.vtime = max(me.vtime, self._floor())
        ticket = _Ticket(tenant, method, now, asyncio.get_running_loop().create_future())
        me.queue.append(ticket)
        self._backlog[tenant] = me
        self.queued += 1
        self.observer.queued(self.queued)
        self._pump()  # a slot the waiting tenants may not take may be this one's
        try:
            return await ticket.future
        except asyncio.CancelledError:
            if not ticket.future.done() or ticket.future.cancelled():
                self._forget(ticket)
            else:  # it was handed a slot just as the caller went away: pass it on
                me.vtime -= ticket.future.result() / me.weight
                self.in_flight -= 1
                me.running -= 1
                self._pump()
            raise

    def _make_room(self, tenant: str, method: str) -> None:
        """The queue is full: the newest call of the heaviest backlog goes (maybe this one)."""
        me = self._tenant(tenant)
        heaviest = max(self._backlog.values(),
                       key=lambda t: len(t.queue) / t.weight)
        if (len(me.queue) + 1) / me.weight >= len(heaviest.queue) / heaviest.weight:
            self.observer.shed(method, tenant, SHED_QUEUE_FULL)
            raise Shed(SHED_QUEUE_FULL, self.service_time(method) * (len(me.queue) + 1), (
                f"tenant {tenant}: the server's queue is full ({self.queue_max} calls) and "
                f"this tenant has the most waiting"))
        victim = heaviest.queue.pop()
        self._drained(victim.tenant, heaviest)
        self.queued -= 1
        self.observer.shed(victim.method, victim.tenant, SHED_QUEUE_FULL)
        victim.future.set_exception(Shed(
            SHED_QUEUE_FULL, self.service_time(victim.method) * (len(heaviest.queue) + 1),
            f"tenant {victim.tenant}: the server's queue is full ({self.queue_max} calls) and "
            f"this tenant has the most waiting"))

    def _forget(self, ticket: _Ticket) -> None:
        t = self._tenants.get(ticket.tenant)
        if t is not None and ticket in t.queue:
            t.queue.remove(ticket)
            self._drained(ticket.tenant, t)
            self.queued -= 1
            self.observer.queued(self.queued)

    def _drained(self, name: str, t: _Tenant) -> None:
        if not t.queue:
            self._backlog.pop(name, None)

    def _charge_start(self, t: _Tenant, method: str) -> float:
        """Take a slot for ``t``; charge it the method's estimated cost (returned)."""
        self._virtual = max(self._virtual, t.vtime)
        estimate = self.service_time(method)
        t.vtime += estimate / t.weight
        t.last_served = next(self._seq)
        t.running += 1
        self.in_flight += 1
        return estimate

    def _pump(self) -> None:
        """Hand free slots to the backlogged tenants with the smallest virtual time."""
        while self.queued and self.in_flight < self.limiter.value + self.spare_slots:
            ready = [(n, t) for n, t in self._backlog.items() if self._may_start(n, t)]
            if not ready:  # the free slot is kept for a tenant that is not waiting now
                break
            t = min((t for _, t in ready), key=lambda t: (t.vtime, t.last_served))
            ticket = t.queue.popleft()
            self._drained(ticket.tenant, t)
            self.queued -= 1
            if ticket.future.done():  # already shed or cancelled
                continue
            ticket.future.set_result(self._charge_start(t, ticket.method))
        self.observer.queued(self.queued)

    async def _dispatch(self, tenant: str, method: str,
                        start: Callable[[], asyncio.Future[T]], estimate: float) -> T:
        t = self._tenant(tenant)
        began = self.clock()
        running = self.in_flight
        try:
            fut = start()
        except BaseException:
            self.in_flight -= 1
            t.running -= 1
            self._pump()
            raise

        def done(f: asyncio.Future[T]) -> None:
            if not f.cancelled():
                # Marked as seen: a caller that went away (the shield below) no longer
                # awaits it, and asyncio would log its error as never retrieved.
                f.exception()
            took = max(0.0, self.clock() - began)
            t.vtime += (took - estimate) / t.weight  # the real cost, not the estimate
            self._service.setdefault(method, _Ewma(50)).add(took)
            self._any.add(took)
            self.in_flight -= 1
            t.running -= 1
            before = self.limiter.value
            if self.limiter.sample(took, running) != before:
                self.observer.limit(self.limiter.value)
            self._pump()

        fut.add_done_callback(done)
        return await asyncio.shield(fut)


__all__ = ["AdaptiveLimit", "FairScheduler", "Observer", "Shed", "SHED_DEADLINE",
           "SHED_QUEUE_FULL", "SHED_QUEUE_WAIT"]
