"""When the embedded broker is recycled: for memory, or once a delete has waited long
enough (ADR 0006). The broker here is a test double that records the recycles asked
for and answers "drained" as told; the clock is a fake one."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pytest

from memstrata.kafka.settings import KafkaSettings
from query_service.publish import IntakePaused, StoredPublisher

import streams.recycle as streams_recycle
from streams.recycle import IntakeHold, Recycler, quiet_reconnects


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

    async def wait_drained(self, group: str, drain: Sequence[str], timeout_s: float) -> bool:
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


# -- holding the embedded Ingest while the broker drains (issue 31) --------------------

class DrainingBroker(FakeBroker):
    """Test double: records what the intake door looked like when it was recycled, and
    drains only once no admitted call is left (as the worker would)."""

    def __init__(self, intake: IntakeHold, drains: bool = True) -> None:
        super().__init__()
        self.rss = 200e6
        self.intake = intake
        self.drains = drains
        self.seen: list[tuple[bool, int]] = []

    async def wait_drained(self, group: str, drain: Sequence[str], timeout_s: float) -> bool:
        return self.drains and self.intake.in_flight() == 0

    def recycle(self, group: str, drain: Sequence[str], topics: Mapping[str, int],
                on_killed: Callable[[], None] | None = None) -> bool:
        self.seen.append((self.intake.is_open, self.intake.in_flight()))
        if on_killed is not None:
            on_killed()
        return super().recycle(group, drain, topics, on_killed)


def test_a_recycle_holds_new_calls_and_waits_for_those_let_through() -> None:
    async def scenario() -> tuple[DrainingBroker, Recycler, list[str], list[str]]:
        intake = IntakeHold()
        broker = DrainingBroker(intake)
        killed: list[str] = []
        rec = Recycler(broker, group="g", drain=["t"], topics={"t": 1}, limit_bytes=100e6,
                       interval_s=1.0, intake=intake, hold_s=2.0,
                       on_killed=lambda: killed.append("killed"))
        order: list[str] = []
        early = await intake.enter(1.0, for_s=10)  # a call published before the recycle

        async def confirm_early() -> None:
            await asyncio.sleep(0.05)
            order.append("early confirmed")
            intake.leave(early)

        async def late_call() -> None:
            await asyncio.sleep(0.01)  # arrives while the door is closed
            token = await intake.enter(5.0, for_s=10)
            order.append("late let in")
            intake.leave(token)

        recycled, *_ = await asyncio.gather(rec.check_once(), confirm_early(), late_call())
        assert recycled
        order.append("recycled" if rec.recycles else "not")
        return broker, rec, order, killed

    broker, rec, order, killed = asyncio.run(scenario())
    assert broker.seen == [(False, 0)]  # the door shut and nothing in flight at the restart
    assert order == ["early confirmed", "late let in", "recycled"], order
    assert killed == ["killed"] and rec.intake is not None and rec.intake.is_open
    assert rec.intake.waited == 1 and rec.intake.timed_out == 0


def test_an_undrained_stream_opens_the_door_again_within_the_hold() -> None:
    async def scenario() -> tuple[bool, DrainingBroker, IntakeHold, float]:
        intake = IntakeHold()
        broker = DrainingBroker(intake, drains=False)
        rec = Recycler(broker, group="g", drain=["t"], topics={"t": 1}, limit_bytes=100e6,
                       interval_s=1.0, intake=intake, hold_s=0.1)
        t0 = time.monotonic()
        done = await rec.check_once()
        return done, broker, intake, time.monotonic() - t0

    done, broker, intake, took = asyncio.run(scenario())
    assert not done and broker.seen == [] and intake.is_open and took < 1.0


def test_a_call_held_past_its_wait_is_turned_away_with_a_hint() -> None:
    async def scenario() -> tuple[int | None, float, int | None]:
        intake = IntakeHold()
        intake.close(hold_s=7.0)
        refused = await intake.enter(0.05, for_s=1)
        hint = intake.retry_after_s()
        intake.open()
        return refused, hint, await intake.enter(0.05, for_s=1)

    refused, hint, token = asyncio.run(scenario())
    assert refused is None and 5.0 < hint <= 7.0 and token is not None


def test_a_token_never_left_stops_counting_after_its_time() -> None:
    now = [0.0]
    intake = IntakeHold(clock=lambda: now[0])
    token = asyncio.run(intake.enter(1.0, for_s=30.0))
    assert token is not None and intake.in_flight() == 1
    now[0] = 29.0
    assert intake.in_flight() == 1
    now[0] = 30.0
    assert intake.in_flight() == 0  # a call that died between publish and confirm


def test_expected_disconnects_are_info_only_within_a_recycle_window(
        caplog: pytest.LogCaptureFixture) -> None:
    fetcher = logging.getLogger("aiokafka.consumer.fetcher")
    caplog.set_level(logging.INFO)
    streams_recycle._RECONNECTS.until = 0.0  # no window left open by an earlier test
    fetcher.error("Failed fetch messages from 111: before")  # no recycle yet: left alone
    with quiet_reconnects(after_s=60.0):
        fetcher.error("Failed fetch messages from 111: during")
    logging.getLogger("aiokafka.consumer.group_coordinator").warning(
        "Heartbeat failed: local member_id was not recognized")  # within its after_s
    levels = [(r.levelname, r.getMessage().rsplit(": ", 1)[-1]) for r in caplog.records]
    assert levels[0] == ("ERROR", "before")
    assert [lvl for lvl, _ in levels[1:]] == ["INFO", "INFO"], levels
    streams_recycle._RECONNECTS.until = 0.0  # the window closed: errors are errors again
    fetcher.error("Failed fetch messages from 111: after")
    assert caplog.records[-1].levelname == "ERROR"


class SentAt(NamedTuple):
    partition: int
    offset: int


class StoredAll:
    """Test double for the worker's StoredTurns: every record stored; the real door."""

    def __init__(self) -> None:
        self.intake = IntakeHold()

    def reached(self, partition: int, offset: int) -> bool:
        return True

    def refused(self, partition: int, offset: int) -> str | None:
        return None


class NoBrokerPublisher(StoredPublisher):
    """Test double: the embedded publisher with its broker send replaced (no Kafka)."""

    async def _send(self, records: Sequence[Any]) -> list[Any]:
        return [SentAt(0, i) for i in range(len(records))]


def test_the_embedded_publisher_waits_at_a_closed_door_then_turns_the_call_away() -> None:
    async def scenario() -> tuple[list[int], str, float, int]:
        stored = StoredAll()
        pub = NoBrokerPublisher(KafkaSettings(brokers="127.0.0.1:1"), stored, wait_s=0.1)
        metas = await pub.send(["turn"])  # type: ignore[list-item]
        during = [stored.intake.in_flight()]  # counted from publish until confirmed
        await pub.confirm(["turn"], metas)  # type: ignore[list-item]
        during.append(stored.intake.in_flight())
        stored.intake.close(hold_s=3.0)
        with pytest.raises(IntakePaused) as paused:
            await pub.send(["turn"])  # type: ignore[list-item]
        waited = stored.intake.timed_out
        opened = asyncio.get_running_loop().call_later(0.05, stored.intake.open)
        await pub.send(["turn"])  # let through once the recycle is over
        opened.cancel()
        return during, str(paused.value), paused.value.retry_after_s, waited

    during, message, retry_after, waited = asyncio.run(scenario())
    assert during == [1, 0] and waited == 1
    assert "nothing of this call was sent" in message and "same message_id" in message
    assert 2.0 < retry_after <= 3.0


def test_a_call_turned_away_is_unavailable_with_the_doors_hint() -> None:
    import grpc

    from query_service.errors import retry_after_s, status_for

    paused = IntakePaused(30.0, 4.0)
    mapped = status_for(paused)
    assert mapped is not None and mapped[0] == grpc.StatusCode.UNAVAILABLE
    assert "recycled" in mapped[1] and retry_after_s(paused) == 4.0
