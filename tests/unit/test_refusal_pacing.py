"""Refusals answered late and paced per tenant (query_service/interceptors/refusals.py).

Issue 31, item 9: one tenant's callers that retry 10 ms after each
RESOURCE_EXHAUSTED sent about 1,000 refused calls/s, each a whole RPC for the
server. Here the pacer holds refusals until their retry-after and spaces a
tenant's refusals, so such callers' refusals come at most at the pacer's rate,
or one per caller per ``hold_max_s``. No sleeping: the clock is a
:class:`FakeClock` and the hold's sleep is a TEST DOUBLE (:class:`FakeSleep`)
that steps it.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from query_service.interceptors.refusals import DEADLINE_MARGIN_S, MIN_HINT_S, RefusalPacer
from query_service.keys import KeyRing, TenantPolicy, set_tenant_policy
from query_service.limits import TenantGate
from query_service.settings import ServiceSettings


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeSleep:
    """TEST DOUBLE for ``asyncio.sleep``: records each hold and moves the fake clock by it."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.slept: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.clock.now += seconds


def test_a_refusal_is_held_until_its_retry_after_and_then_says_retry_now():
    clock = FakeClock()
    pacer = RefusalPacer(1.0, 10, clock=clock)
    hold = pacer.plan("t", retry_s=0.25, tenant_rate_per_s=200)
    assert hold.seconds == pytest.approx(0.25)
    assert hold.retry_after_s == MIN_HINT_S  # the hold covered the wait
    assert pacer.held == 1
    pacer.release()
    assert pacer.held == 0


def test_a_tenants_refusals_are_answered_one_pace_apart():
    """Refusals of one instant are answered 1/20 s apart (the pacer's rate), or 1/4 s
    apart for a tenant whose own rate limit is 4 calls/s."""
    clock = FakeClock()
    pacer = RefusalPacer(5.0, 1000, 20.0, clock=clock)
    holds = [pacer.plan("flood", retry_s=0.001, tenant_rate_per_s=200).seconds
             for _ in range(10)]
    assert holds[0] == pytest.approx(0.001)
    assert all(b - a == pytest.approx(0.05) for a, b in zip(holds, holds[1:]))
    slow = [pacer.plan("slow", retry_s=0.0, tenant_rate_per_s=4).seconds for _ in range(3)]
    assert slow == [0.0, pytest.approx(0.25), pytest.approx(0.5)]
    # Another tenant is not paced behind the flood's refusals.
    assert pacer.plan("quiet", 0.001, 200).seconds == pytest.approx(0.001)


@pytest.mark.parametrize("callers", [8, 64])
def test_callers_that_retry_at_once_send_few_refusals(callers: int):
    """The storm of the issue, on the fake clock: callers that retry 10 ms after each
    refusal, for 20 s. Answered at once, 64 of them would send 6,400 refused calls/s;
    held, at most the pacer's 20/s or one per caller per hold_max_s (2 s)."""
    clock = FakeClock()
    sleep = FakeSleep(clock)
    hold_max, pace_rate = 2.0, 20.0
    pacer = RefusalPacer(hold_max, 1000, pace_rate, clock=clock, sleep=sleep,
                         rng=random.Random(31))
    rate, retry_delay, span = 200.0, 0.010, 20.0
    # Each caller's next send time; every call is refused (the bucket stays empty).
    due = [clock.now] * callers
    end = clock.now + span
    refused = 0

    async def storm() -> None:
        nonlocal refused
        while True:
            i = min(range(callers), key=due.__getitem__)
            if due[i] >= end:
                return
            clock.now = max(clock.now, due[i])
            answer_at = clock.now + pacer.plan("flood", 0.005, rate).seconds
            pacer.release()
            refused += answer_at < end  # refusals answered within the span
            due[i] = answer_at + retry_delay

    asyncio.run(storm())
    # Past the paced slots a hold is between hold_max / 2 and hold_max.
    bound = max(pace_rate, callers / (hold_max / 2 + retry_delay))
    assert refused / span <= bound + callers / span  # instead of callers / 10 ms
    assert refused / span >= 0.9 * min(pace_rate, callers / (hold_max + retry_delay))


def test_holds_are_bounded_by_hold_max_and_the_deadline():
    clock = FakeClock()
    pacer = RefusalPacer(0.5, 100, 10.0, clock=clock, rng=random.Random(31))
    long = pacer.plan("t", retry_s=3.0, tenant_rate_per_s=200)
    assert 0.25 <= long.seconds <= 0.5
    assert long.retry_after_s == pytest.approx(3.0 - long.seconds)  # the rest is the hint
    # A crowd does not push the horizon out: every later refusal is held at most 0.5 s.
    assert max(pacer.plan("t", 0.0, 200).seconds for _ in range(50)) <= 0.5
    near = pacer.plan("u", retry_s=0.4, tenant_rate_per_s=200, remaining_s=0.1)
    assert near.seconds == pytest.approx(0.1 - DEADLINE_MARGIN_S)  # answered before it
    assert near.retry_after_s == pytest.approx(0.4 - near.seconds)
    past = pacer.plan("v", retry_s=0.4, tenant_rate_per_s=200, remaining_s=0.01)
    assert past.seconds == 0.0 and past.retry_after_s == pytest.approx(0.4)


def test_a_crowd_past_the_paced_slots_is_answered_spread_out_not_at_once():
    """100 refusals at one instant, 20 paced slots in a 1 s hold: the other 80 are spread
    over the second half second, so their retries do not come back as one burst."""
    clock = FakeClock()
    pacer = RefusalPacer(1.0, 1000, 20.0, clock=clock, rng=random.Random(31))
    holds = [pacer.plan("flood", 0.0, 200).seconds for _ in range(100)]
    paced, rest = holds[:20], holds[20:]
    assert paced == [pytest.approx(i / 20) for i in range(20)]
    assert all(0.5 <= h <= 1.0 for h in rest)
    per_10ms = [sum(1 for h in rest if b / 100 <= h < (b + 1) / 100) for b in range(50, 100)]
    assert max(per_10ms) <= 8  # one instant for all 80 would be a burst of 80


def test_at_most_held_max_calls_are_held_then_refusals_are_answered_at_once():
    clock = FakeClock()
    pacer = RefusalPacer(1.0, 3, clock=clock)
    assert [pacer.plan("t", 0.1, 200).seconds > 0 for _ in range(4)] == [True] * 3 + [False]
    assert pacer.held == 3
    pacer.release()
    assert pacer.plan("t", 0.1, 200).seconds > 0


def test_hold_max_zero_answers_every_refusal_at_once_with_the_limits_hint():
    pacer = RefusalPacer(0.0, 1000, clock=FakeClock())
    hold = pacer.plan("t", retry_s=0.2, tenant_rate_per_s=200)
    assert (hold.seconds, hold.retry_after_s, pacer.held) == (0.0, 0.2, 0)
    with pytest.raises(ValueError, match="hold_max_s"):
        RefusalPacer(-1.0, 1)
    with pytest.raises(ValueError, match="held_max"):
        RefusalPacer(1.0, -1)
    with pytest.raises(ValueError, match="rate_per_s"):
        RefusalPacer(1.0, 1, 0.0)


def test_refuse_late_sleeps_the_hold_and_frees_its_place_even_when_cancelled():
    clock = FakeClock()
    sleep = FakeSleep(clock)
    pacer = RefusalPacer(1.0, 10, clock=clock, sleep=sleep)
    hint = asyncio.run(pacer.refuse_late("t", 0.3, 200))
    assert sleep.slept == [pytest.approx(0.3)] and hint == MIN_HINT_S and pacer.held == 0

    async def cancelled() -> None:
        real = RefusalPacer(1.0, 10)  # the real asyncio.sleep, cancelled at once
        task = asyncio.ensure_future(real.refuse_late("t", 0.5, 200))
        await asyncio.sleep(0)
        assert real.held == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert real.held == 0

    asyncio.run(cancelled())


def test_peek_tells_the_refusal_without_taking_a_token_or_a_slot(tmp_path: Path):
    path = tmp_path / "keys.json"
    set_tenant_policy(path, "t", TenantPolicy(rate_per_s=16, burst=2, max_concurrent=1))
    clock = FakeClock()
    gate = TenantGate(ServiceSettings(), KeyRing(path), clock=clock)
    assert gate.peek("t") is None and gate.peek("t") is None  # nothing taken
    assert gate.admit("t") is None
    assert gate.peek("t") == ("concurrency", 0.05)
    gate.release("t")
    assert gate.admit("t") is None
    gate.release("t")
    assert gate.peek("t") == ("rate", 0.0625) == gate.admit("t")
