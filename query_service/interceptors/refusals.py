"""Refusals answered late, so a caller that retries at once cannot spend the CPU of others.

A refused call is a whole RPC for gRPC (a stream opened, headers parsed, a
status sent, the event loop woken several times): measured on 2 cores, about
0.5-0.7 ms of the server's CPU, almost all of it in gRPC's core and the
wake-ups between its threads and the event loop, not in the interceptor's
Python. Worse than the CPU, every call, refused or not, goes through gRPC's
one accept loop (``grpc.aio`` takes new calls one at a time, in arrival
order, on the event loop, which waits for the GIL while the pool threads run
Searches), so a flood of refused calls queues the other tenants' calls before
the fair scheduler sees them. Measured on 2 cores: callers retrying 10 ms
after each RESOURCE_EXHAUSTED sent 230-1,000 refused calls/s, and a quiet
tenant's Search spent about 40 ms inside the service but 0.6-1.3 s end to
end.

Refusing earlier saves only part of each call's cost, so refusals are made
rare: a refused call is held (an ``asyncio.sleep`` on the server's loop: no
thread, no CPU) until its ``retry-after``, and a tenant's refusals are answered
no faster than ``rate_per_s`` (nor than the tenant's own rate limit). A caller
that retries at once waits out the hold instead. The answer's
``retry-after-ms`` is what remains of the wait after the hold (1 ms when the
hold covered it).

Bounds: a call is held at most ``hold_max_s`` and never past its deadline. When
a tenant's refusals fill every paced slot up to ``hold_max_s`` ahead, the next
ones are held a random time between half of ``hold_max_s`` and all of it: the
same hold for all would answer a crowd that came together together again, and
its retries would come back together every time, a burst of calls in front of
any other tenant's call that arrives just then. So a tenant with
N calls refused over and over sends at most about
``max(rate_per_s, N / (hold_max_s / 2))`` refusals/s; at most ``held_max`` calls are
held at once (all tenants together), and beyond that a refusal is answered at
once. A held call has not read its request (the interceptor refuses before
reading it), so what it keeps is gRPC's call state, not the message.
Everything runs on the event loop (no locks) and reads time from an injectable
clock, so the tests step a fake one.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[object]]

#: A held refusal is answered this long before the call's deadline, so the caller
#: reads RESOURCE_EXHAUSTED and its hint rather than DEADLINE_EXCEEDED.
DEADLINE_MARGIN_S = 0.02
#: The smallest retry hint sent: "retry now" is 1 ms, never 0 (0 reads as "no hint").
MIN_HINT_S = 0.001


@dataclass(frozen=True)
class Hold:
    """How one refusal is answered: after ``seconds``, with ``retry_after_s`` as its hint."""

    seconds: float
    retry_after_s: float


class RefusalPacer:
    """Plans and holds refusals per tenant (see the module docstring).

    ``hold_max_s`` 0 answers every refusal at once (the behaviour before this
    existed). ``rate_per_s``: a tenant's refusals answered per second, at most.
    ``clock``: monotonic seconds; ``sleep``: how a hold waits (tests pass a fake
    that steps the fake clock); ``rng``: the spread of holds past the paced slots
    (tests pass a seeded one).
    """

    def __init__(self, hold_max_s: float, held_max: int, rate_per_s: float = 20.0, *,
                 clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep,
                 rng: random.Random | None = None) -> None:
        if hold_max_s < 0:
            raise ValueError(f"hold_max_s must be >= 0, got {hold_max_s}")
        if held_max < 0:
            raise ValueError(f"held_max must be >= 0, got {held_max}")
        if rate_per_s <= 0:
            raise ValueError(f"rate_per_s must be > 0, got {rate_per_s}")
        self.hold_max_s = hold_max_s
        self.held_max = held_max
        self.rate_per_s = rate_per_s
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        #: Refused calls being held now, all tenants together.
        self.held = 0
        #: Per tenant: the earliest time its next refusal may be answered.
        self._next: dict[str, float] = {}

    def plan(self, tenant: str, retry_s: float, tenant_rate_per_s: float,
             remaining_s: float | None = None) -> Hold:
        """How to answer a refusal of ``tenant`` now (``retry_s``: the limit's own hint).

        ``tenant_rate_per_s``: the tenant's rate limit (its refusals come no
        faster); ``remaining_s``: the call's time left (None: no deadline). A
        hold with ``seconds > 0`` counts as held: the caller must call
        :meth:`release` when it ends (:meth:`refuse_late` does).
        """
        retry_s = max(0.0, retry_s)
        if self.hold_max_s <= 0 or self.held >= self.held_max:
            return Hold(0.0, max(MIN_HINT_S, retry_s))
        now = self.clock()
        horizon = now + self.hold_max_s
        slot = max(now + retry_s, self._next.get(tenant, now))
        if slot <= horizon:
            # The next refusal of this tenant comes a pace later (at most a pace past
            # the horizon: a crowd cannot push the plan, and the hints, further out).
            self._next[tenant] = slot + 1.0 / min(self.rate_per_s,
                                                  max(tenant_rate_per_s, 1e-9))
        else:  # every paced slot is taken: spread the rest over the second half
            slot = horizon - 0.5 * self.hold_max_s * self.rng.random()
        seconds = slot - now
        if remaining_s is not None:
            seconds = min(seconds, max(0.0, remaining_s - DEADLINE_MARGIN_S))
        hint = max(MIN_HINT_S, retry_s - seconds)
        if seconds <= 0.0:
            return Hold(0.0, hint)
        self.held += 1
        return Hold(seconds, hint)

    def release(self) -> None:
        """A held refusal was answered (or its caller went away)."""
        self.held = max(0, self.held - 1)

    async def refuse_late(self, tenant: str, retry_s: float, tenant_rate_per_s: float,
                          remaining_s: float | None = None) -> float:
        """Hold the refusal as :meth:`plan` says; return the hint to answer it with.

        A cancelled call (the caller went away while held) releases its place too.
        """
        hold = self.plan(tenant, retry_s, tenant_rate_per_s, remaining_s)
        if hold.seconds <= 0.0:
            return hold.retry_after_s
        try:
            await self.sleep(hold.seconds)
        finally:
            self.release()
        return hold.retry_after_s


__all__ = ["DEADLINE_MARGIN_S", "Hold", "MIN_HINT_S", "RefusalPacer"]
