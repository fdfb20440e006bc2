"""Fair scheduler, adaptive limit and load shedding (query_service/scheduler.py).

No threads, no sleeps: the clock is a :class:`FakeClock` the test steps, and
the "work" is a TEST DOUBLE (:class:`FakeWork`): an asyncio future per call that
the test completes by hand, after moving the clock by the service time it wants
the scheduler to measure.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from query_service.scheduler import (
    SHED_DEADLINE,
    SHED_QUEUE_FULL,
    SHED_QUEUE_WAIT,
    AdaptiveLimit,
    FairScheduler,
    Shed,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeWork:
    """TEST DOUBLE for a pool: records what started, in order; the test finishes each."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.futures: list[asyncio.Future[str]] = []

    def start(self, label: str) -> Callable[[], asyncio.Future[str]]:
        def go() -> asyncio.Future[str]:
            fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self.started.append(label)
            self.futures.append(fut)
            return fut
        return go

    def finish_oldest(self) -> None:
        fut = next(f for f in self.futures if not f.done())
        fut.set_result("ok")


class Recorder:
    def __init__(self) -> None:
        self.sheds: list[tuple[str, str, str]] = []
        self.limits: list[int] = []

    def shed(self, method: str, tenant: str, reason: str) -> None:
        self.sheds.append((method, tenant, reason))

    def limit(self, value: int) -> None:
        self.limits.append(value)

    def queued(self, value: int) -> None:
        pass


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def scheduler(clock: FakeClock, limit: int = 1, **kwargs: Any) -> FairScheduler:
    return FairScheduler(AdaptiveLimit(limit, limit, limit, clock=clock), clock=clock,
                         observer=kwargs.pop("observer", None) or Recorder(), **kwargs)


async def warm(s: FairScheduler, work: FakeWork, clock: FakeClock, service_s: float,
               n: int = 5) -> None:
    """Teach the scheduler a service time of ``service_s`` with ``n`` finished calls."""
    for _ in range(n):
        task = asyncio.ensure_future(s.run("warm", "Search", None, work.start("warm")))
        await settle()
        clock.now += service_s
        work.finish_oldest()
        await task


def spawn(s: FairScheduler, work: FakeWork, tenant: str, label: str,
          deadline: float | None = None) -> asyncio.Task[Any]:
    return asyncio.ensure_future(s.run(tenant, "Search", deadline, work.start(label)))


def run(coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(coro())


def test_a_quiet_tenant_goes_ahead_of_a_flooding_tenants_backlog():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock)
        flood = [spawn(s, work, "b", f"b{i}") for i in range(10)]
        await settle()
        assert work.started == ["b0"] and s.queued == 9
        quiet = spawn(s, work, "a", "a0")
        await settle()
        clock.now += 0.01
        work.finish_oldest()  # b0 done: the next slot goes to a, not to b1
        await settle()
        assert work.started == ["b0", "a0"]
        while not all(t.done() for t in [*flood, quiet]):
            clock.now += 0.01
            work.finish_oldest()
            await settle()
        assert work.started == ["b0", "a0", *[f"b{i}" for i in range(1, 10)]]

    run(body)


def test_a_slot_is_kept_for_another_active_tenant_and_given_back_when_it_goes_quiet():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock, limit=2, share_window_s=1.0)
        alone = [spawn(s, work, "b", f"b{i}") for i in range(2)]
        await settle()
        assert work.started == ["b0", "b1"]  # alone, b uses both slots
        clock.now += 0.01
        work.finish_oldest()
        work.finish_oldest()
        await asyncio.gather(*alone)
        quiet = spawn(s, work, "a", "a0")  # a is active now
        await settle()
        clock.now += 0.01
        work.finish_oldest()
        await quiet
        flood = [spawn(s, work, "b", f"b{i}") for i in range(2, 6)]
        await settle()
        assert work.started[3:] == ["b2"]  # one slot stays free for a
        quiet = spawn(s, work, "a", "a1")
        await settle()
        assert work.started[3:] == ["b2", "a1"]  # a starts at once, no wait for b2
        clock.now += 0.01
        work.finish_oldest()  # b2
        work.finish_oldest()  # a1
        await quiet
        await settle()
        assert work.started[5:] == ["b3"]
        clock.now += 1.5  # a has been quiet longer than the window: b gets both slots
        work.finish_oldest()  # b3
        await settle()
        assert work.started[6:] == ["b4", "b5"]
        while not all(t.done() for t in flood):
            work.finish_oldest()
            await settle()

    run(body)


def test_fifo_order_within_a_tenant_and_round_robin_between_equals():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock)
        tasks = [spawn(s, work, "x", "x-hold")]
        await settle()
        tasks += [spawn(s, work, t, f"{t}{i}") for t in ("p", "q") for i in range(3)]
        await settle()
        while not all(t.done() for t in tasks):
            clock.now += 0.01
            work.finish_oldest()
            await settle()
        rest = work.started[1:]
        assert [x for x in rest if x[0] == "p"] == ["p0", "p1", "p2"]
        assert [x for x in rest if x[0] == "q"] == ["q0", "q1", "q2"]
        # Neither tenant runs twice while the other waits.
        assert all(rest[i][0] != rest[i + 1][0] for i in range(len(rest) - 1)), rest

    run(body)


def test_weights_share_the_pool_in_proportion():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        weights = {"heavy": 2.0, "light": 1.0}
        s = scheduler(clock, weight_of=lambda t: weights.get(t, 1.0))
        await warm(s, work, clock, 0.01)
        hold = spawn(s, work, "x", "hold")
        await settle()
        tasks = [spawn(s, work, t, t) for t in ("heavy", "light") for _ in range(30)]
        await settle()
        first: list[str] = []
        while len(first) < 30:
            clock.now += 0.01
            work.finish_oldest()
            await settle()
            first = [x for x in work.started if x in weights][:30]
        assert abs(first.count("heavy") - 20) <= 1, first
        while not all(t.done() for t in [*tasks, hold]):
            clock.now += 0.01
            work.finish_oldest()
            await settle()

    run(body)


def test_the_flooding_tenant_is_shed_by_deadline_and_the_quiet_one_is_not():
    async def body() -> None:
        clock, work, rec = FakeClock(), FakeWork(), Recorder()
        s = scheduler(clock, observer=rec)
        await warm(s, work, clock, 0.1)  # 100 ms per call, one at a time
        flood = [spawn(s, work, "b", f"b{i}", deadline=clock.now + 1.0) for i in range(20)]
        await settle()
        shed = [t for t in flood if t.done() and isinstance(t.exception(), Shed)]
        # About ten fit in one second; the rest would wait past their deadline.
        assert 5 <= len(shed) <= 15, len(shed)
        exc = shed[0].exception()
        assert isinstance(exc, Shed) and exc.reason == SHED_DEADLINE
        assert exc.retry_after_s >= 0.099 and "deadline" in str(exc) and "tenant b" in str(exc)
        quiet = spawn(s, work, "a", "a0", deadline=clock.now + 1.0)
        await settle()
        assert not quiet.done()  # queued, not shed
        assert all(t == "b" for _, t, _r in rec.sheds)
        while not quiet.done():
            clock.now += 0.1
            work.finish_oldest()
            await settle()
        assert quiet.result() == "ok"
        assert work.started.index("a0") <= 7  # ahead of b's backlog
        while not all(t.done() for t in flood):
            clock.now += 0.1
            work.finish_oldest()
            await settle()

    run(body)


def test_no_deadline_still_sheds_past_the_max_wait():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock, max_wait_s=0.5)
        await warm(s, work, clock, 0.1)
        flood = [spawn(s, work, "b", f"b{i}") for i in range(12)]
        await settle()
        reasons = {t.exception().reason for t in flood  # type: ignore[union-attr]
                   if t.done() and t.exception() is not None}
        assert reasons == {SHED_QUEUE_WAIT}
        while not all(t.done() for t in flood):
            clock.now += 0.1
            work.finish_oldest()
            await settle()

    run(body)


def test_a_full_queue_evicts_the_heaviest_backlog_not_the_newcomer():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock, queue_max=4)
        flood = [spawn(s, work, "b", f"b{i}") for i in range(5)]  # 1 runs, 4 wait
        await settle()
        quiet = spawn(s, work, "a", "a0")
        await settle()
        evicted = flood[-1]
        assert evicted.done() and isinstance(evicted.exception(), Shed)
        assert evicted.exception().reason == SHED_QUEUE_FULL  # type: ignore[union-attr]
        assert not quiet.done() and s.queued == 4
        more = spawn(s, work, "b", "b5")  # b is still the heaviest: the newcomer goes
        await settle()
        assert more.done() and isinstance(more.exception(), Shed)
        while not all(t.done() for t in [*flood[:-1], quiet]):
            clock.now += 0.01
            work.finish_oldest()
            await settle()
        assert work.started[1] == "a0"

    run(body)


def test_cancel_while_queued_leaves_the_queue_and_a_running_call_keeps_its_slot():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock)
        running = spawn(s, work, "b", "b0")
        waiting = spawn(s, work, "b", "b1")
        await settle()
        waiting.cancel()
        await settle()
        assert s.queued == 0
        running.cancel()  # the caller goes; its work (in a thread) has not ended
        await settle()
        assert s.in_flight == 1
        nxt = spawn(s, work, "a", "a0")
        await settle()
        assert work.started == ["b0"]  # the slot is still taken
        work.finish_oldest()
        await settle()
        assert work.started == ["b0", "a0"] and s.in_flight == 1
        work.finish_oldest()
        assert await nxt == "ok"

    run(body)


def test_work_that_fails_after_its_caller_went_away_is_not_reported_as_never_retrieved():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock)
        unhandled: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unhandled.append(ctx))
        caller = spawn(s, work, "b", "b0")
        await settle()
        caller.cancel()  # the client went away; the work (in its thread) still runs
        await settle()
        work.futures[0].set_exception(RuntimeError("cancelled at its next step"))
        await settle()
        assert s.in_flight == 0  # the slot came back
        del work.futures[:], caller  # (the cancelled task's traceback holds the future)
        gc.collect()  # asyncio reports a never-retrieved error when the future is freed
        await settle()
        assert unhandled == []

    run(body)


def test_adaptive_limit_cuts_on_a_latency_rise_and_grows_back():
    clock = FakeClock()
    lim = AdaptiveLimit(4, 1, 8, tolerance=2.0, clock=clock)
    for _ in range(200):  # steady 10 ms with every slot busy: grows to the ceiling
        clock.now += 0.01
        lim.sample(0.01, in_flight=lim.value)
    assert lim.value == 8
    for _ in range(30):  # suddenly 10x slower: cut, at most once per recent service time
        clock.now += 0.01
        lim.sample(0.1, in_flight=lim.value)
    cut = lim.value
    assert 1 <= cut < 8
    for _ in range(3000):  # back to normal: the limit climbs again
        clock.now += 0.01
        lim.sample(0.01, in_flight=lim.value)
    assert lim.value > cut
    for _ in range(100):  # nobody waits for a slot (1 in flight): no growth past need
        lim.sample(0.01, in_flight=0)
    assert 1 <= lim.value <= 8
    with pytest.raises(ValueError, match="min_limit"):
        AdaptiveLimit(1, 3, 2)


def test_limit_changes_reach_the_observer():
    async def body() -> None:
        clock, work, rec = FakeClock(), FakeWork(), Recorder()
        s = FairScheduler(AdaptiveLimit(1, 1, 3, clock=clock), clock=clock, observer=rec)
        tasks = [spawn(s, work, "b", f"b{i}") for i in range(40)]
        await settle()
        while not all(t.done() for t in tasks):
            clock.now += 0.01
            work.finish_oldest()
            await settle()
        assert rec.limits[0] == 1 and max(rec.limits) == 3

    run(body)


def test_idle_time_banks_no_credit():
    """A tenant back from idle shares with the busy one; it does not get a long turn alone."""
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock)
        await warm(s, work, clock, 0.01, n=20)  # tenant "warm" has had 20 calls' worth
        hold = spawn(s, work, "x", "hold")
        await settle()
        tasks = [spawn(s, work, t, f"{t}{i}") for i in range(5) for t in ("warm", "new")]
        await settle()
        while not all(t.done() for t in [*tasks, hold]):
            clock.now += 0.01
            work.finish_oldest()
            await settle()
        order = [x.rstrip("0123456789") for x in work.started[21:]]
        assert order[:4] in (["new", "warm", "new", "warm"], ["warm", "new", "warm", "new"]), \
            order

    run(body)


def test_build_pools_fair_by_default_and_fifo_by_setting():
    from query_service.metrics import ServiceMetrics
    from query_service.settings import ServiceSettings
    from query_service.work import build_pools

    fair = build_pools(ServiceSettings(read_threads=3, answer_threads=2, spare_slots=0),
                       ServiceMetrics(), weight_of=lambda t: 1.0)
    fifo = build_pools(ServiceSettings(scheduler="fifo", read_threads=3), ServiceMetrics(),
                       weight_of=lambda t: 1.0)
    try:
        assert fifo.schedulers == {}
        assert fifo.read._max_workers == 3  # fifo keeps no spare thread: nothing would use it
        assert fair.schedulers[fair.read].limiter.value == 3  # ceiling: the pool's threads
        assert fair.schedulers[fair.answer].limiter.value == 2
        assert fair.schedulers[fair.read].spare_slots == 0
        assert fair.write not in fair.schedulers  # one writer: nothing to share
    finally:
        fair.shutdown()
        fifo.shutdown()
    # By default one thread of each pool is spare (issue 31: isolation beside a retry storm).
    default = build_pools(ServiceSettings(read_threads=2, answer_threads=2), ServiceMetrics(),
                          weight_of=lambda t: 1.0)
    try:
        assert default.schedulers[default.read].spare_slots == 1
        assert default.schedulers[default.read].limiter.value == 1
        assert default.read._max_workers == 2
    finally:
        default.shutdown()
    # A spare slot is one of the pool's threads: the ceiling is the threads less it.
    spare = build_pools(ServiceSettings(read_threads=3, answer_threads=1, spare_slots=1),
                        ServiceMetrics(), weight_of=lambda t: 1.0)
    try:
        assert spare.schedulers[spare.read].limiter.value == 2
        assert spare.schedulers[spare.read].spare_slots == 1
        assert spare.schedulers[spare.answer].limiter.value == 1  # never below 1 ...
        assert (spare.read._max_workers, spare.answer._max_workers) == (3, 2)  # ... + spare
    finally:
        spare.shutdown()


def test_a_spare_slot_goes_to_a_tenant_with_nothing_running_never_to_the_flood():
    async def body() -> None:
        clock, work = FakeClock(), FakeWork()
        s = scheduler(clock, limit=1, spare_slots=1)
        flood = [spawn(s, work, "b", f"b{i}") for i in range(3)]
        await settle()
        assert work.started == ["b0"]  # the flood fills the limit; the spare stays free
        quiet = spawn(s, work, "a", "a0")
        await settle()
        assert work.started == ["b0", "a0"] and s.in_flight == 2  # at once, in the spare
        again = spawn(s, work, "a", "a1")  # a has a call running now: it waits its turn
        await settle()
        assert work.started == ["b0", "a0"]
        work.futures[1].set_result("ok")  # a0 ends: the spare is free, a has none running
        await settle()
        assert work.started == ["b0", "a0", "a1"]
        for _ in range(4):
            work.finish_oldest()
            await settle()
        assert await quiet == "ok" and await again == "ok"
        assert [await f for f in flood] == ["ok"] * 3
        assert work.started[3:] == ["b1", "b2"] and s.in_flight == 0

    run(body)


def test_a_shed_call_carries_retry_after_ms():
    """Pools.run puts the scheduler's hint in the call's trailing metadata."""
    from query_service.metrics import ServiceMetrics
    from query_service.settings import ServiceSettings
    from query_service.work import build_pools

    class Context:  # TEST DOUBLE for the two grpc.aio context methods Pools.run uses
        def __init__(self) -> None:
            self.trailing: tuple[tuple[str, str], ...] = ()

        def time_remaining(self) -> float | None:
            return None

        def set_trailing_metadata(self, md: tuple[tuple[str, str], ...]) -> None:
            self.trailing = md

    async def body() -> None:
        pools = build_pools(ServiceSettings(read_threads=1, queue_max_wait_s=0.01),
                            ServiceMetrics(), weight_of=lambda t: 1.0)
        sched = pools.schedulers[pools.read]
        sched._any.add(1.0)  # pretend a call takes a second
        release = asyncio.Event()
        loop = asyncio.get_running_loop()
        try:
            def block(token: Any) -> None:
                asyncio.run_coroutine_threadsafe(release.wait(), loop).result(10)

            busy = asyncio.ensure_future(pools.run(pools.read, Context(), block, method="X"))
            await settle()
            ctx = Context()
            with pytest.raises(Shed):  # it would wait about 1 s for the busy thread
                await pools.run(pools.read, ctx, lambda t: None, method="X")
            assert ctx.trailing[0][0] == "retry-after-ms" and int(ctx.trailing[0][1]) >= 990
            release.set()
            await busy
        finally:
            pools.shutdown()

    run(body)


def test_a_shed_call_is_held_until_its_retry_after_like_a_refusal_of_the_gate():
    """Issue 31, item 9: a caller that retries at once after the scheduler sheds its call
    must not get its next try in at once either. Pools.run holds the refusal in the
    service's refusal pacer (its fake sleep here steps a fake clock), out of the in-flight
    gauge and the latency, then answers the hint that remains: 1 ms when the hold covered
    the wait, the rest when the call's deadline cut the hold short."""
    from query_service.calls import CALL, CallInfo
    from query_service.interceptors.refusals import MIN_HINT_S, RefusalPacer
    from query_service.metrics import ServiceMetrics
    from query_service.settings import ServiceSettings
    from query_service.work import build_pools

    class Context:  # TEST DOUBLE for the two grpc.aio context methods Pools.run uses
        def __init__(self, remaining: float | None) -> None:
            self.remaining = remaining
            self.trailing: tuple[tuple[str, str], ...] = ()

        def time_remaining(self) -> float | None:
            return self.remaining

        def set_trailing_metadata(self, md: tuple[tuple[str, str], ...]) -> None:
            self.trailing = md

    metrics = ServiceMetrics()
    gauge = metrics.in_flight.labels(method="Search")
    held: list[tuple[float, float]] = []  # (seconds, the in-flight gauge meanwhile)
    clock = FakeClock()

    async def fake_sleep(seconds: float) -> None:  # TEST DOUBLE for asyncio.sleep
        held.append((seconds, gauge._value.get()))
        clock.now += seconds

    pacer = RefusalPacer(2.0, 100, 20.0, clock=clock, sleep=fake_sleep)

    async def body() -> None:
        pools = build_pools(ServiceSettings(read_threads=1, queue_max_wait_s=0.01), metrics,
                            weight_of=lambda t: 1.0, pacer=pacer,
                            rate_of=lambda tenant: 200.0)
        sched = pools.schedulers[pools.read]
        sched._any.add(1.0)  # pretend a call takes a second
        release = asyncio.Event()
        loop = asyncio.get_running_loop()
        CALL.set(CallInfo(method="Search", tenant="flood"))
        try:
            def block(token: Any) -> None:
                asyncio.run_coroutine_threadsafe(release.wait(), loop).result(10)

            busy = asyncio.ensure_future(pools.run(pools.read, Context(None), block))
            await settle()
            gauge.inc()  # the interceptor counts the call in flight before it runs
            ctx = Context(None)
            with pytest.raises(Shed) as shed:  # it would wait about 1 s for the thread
                await pools.run(pools.read, ctx, lambda t: None)
            assert held == [(pytest.approx(1.0, abs=0.02), 0.0)]  # held, not in flight
            assert gauge._value.get() == 1.0  # counted again for the interceptor's end
            assert ctx.trailing == (("retry-after-ms", "1"),)
            assert shed.value.retry_after_s == MIN_HINT_S and "retry in 1 ms" in str(shed.value)
            ctx = Context(0.3)  # a deadline cuts the hold short: the rest is the hint
            with pytest.raises(Shed):
                await pools.run(pools.read, ctx, lambda t: None)
            assert held[1][0] == pytest.approx(0.3 - 0.02)
            assert 700 <= int(ctx.trailing[0][1]) <= 1000
            assert pacer.held == 0
            release.set()
            await busy
        finally:
            gauge.dec()
            pools.shutdown()

    run(body)
