"""When the embedded broker is recycled: for memory, or once a delete has waited long
enough (ADR 0006). The broker here is a test double that records the recycles asked
for and answers "drained" as told; the clock is a fake one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from streams.recycle import Recycler


class FakeBroker:
    """Test double: an RSS to report, and whether the stream is drained."""

    def __init__(self) -> None:
        self.rss = 10e6
        self.drained = True
        self.asked = 0

    def tansu_rss_bytes(self) -> float:
        return self.rss

    def recycle(self, group: str, drain: Sequence[str], topics: Mapping[str, int],
                on_killed: Callable[[], None] | None = None) -> bool:
        self.asked += 1
        return self.drained


def _recycler(broker: FakeBroker, deletes: list[float], now: list[float],
              erase_within_s: float = 60.0) -> Recycler:
    return Recycler(broker, group="g", drain=["t"], topics={"t": 1}, limit_bytes=100e6,
                    interval_s=1.0, erasures=lambda: deletes[0],
                    erase_within_s=erase_within_s, clock=lambda: now[0])


def test_a_delete_recycles_the_broker_once_its_wait_is_over() -> None:
    broker, deletes, now = FakeBroker(), [0.0], [0.0]
    rec = _recycler(broker, deletes, now)
    check = lambda: asyncio.run(rec.check_once())  # noqa: E731
    assert not check() and broker.asked == 0          # nothing deleted, memory low
    deletes[0] = 1.0
    assert not check() and broker.asked == 0          # the wait starts now
    now[0] = 59.0
    assert not check() and broker.asked == 0
    now[0] = 60.0
    broker.drained = False
    assert not check() and broker.asked == 1          # due, but the stream is busy
    broker.drained = True
    now[0] = 61.0
    assert check() and rec.recycles == 1               # due and drained
    now[0] = 500.0
    assert not check() and broker.asked == 2          # nothing new since: no recycle
    deletes[0] = 3.0
    now[0] = 501.0
    assert not check()                                 # a later delete waits its own time
    now[0] = 561.0
    assert check() and rec.recycles == 2


def test_memory_alone_recycles_and_zero_means_memory_only() -> None:
    broker, deletes, now = FakeBroker(), [5.0], [0.0]
    rec = _recycler(broker, deletes, now, erase_within_s=0)
    deletes[0] = 9.0
    now[0] = 10_000.0
    assert not asyncio.run(rec.check_once()) and broker.asked == 0
    broker.rss = 200e6
    assert asyncio.run(rec.check_once()) and rec.recycles == 1
