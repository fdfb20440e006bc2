"""A control event's ``after`` never blocks its partition for good (issue 31, item 7).

An offset past its partition's end, or a partition the topic does not have,
is never reached: the event waits only for the turns that exist. However the
turns move, the wait is bounded by ``control_wait_max_s``.
"""

from __future__ import annotations

import asyncio
import time

from memstrata.limits import TurnLimits
from streams import topics
from memstrata.wire import ControlEvent, ControlType
from streams.events import utcnow
from streams.processor import Processor
from streams.progress import TurnProgress
from streams.records import Record
from streams.settings import StreamSettings
from tests.unit.streams.doubles import RecordingWriterDouble

TURNS = TurnLimits()


def control(after: dict[int, int], type_: ControlType = "delete_session") -> Record:
    ev = ControlEvent(type=type_, tenant_id="acme", user_id="maya", session_id="a",
                      ts=utcnow(), after=after)
    return Record(topics.CONTROL, 0, 0, ev.key, ev.to_bytes())


class EndsDouble:
    """Not a broker: end offsets of the turns topic, counting the reads."""

    def __init__(self, ends: dict[int, int] | Exception) -> None:
        self.ends = ends
        self.reads = 0

    async def __call__(self) -> dict[int, int]:
        self.reads += 1
        if isinstance(self.ends, Exception):
            raise self.ends
        return dict(self.ends)


async def _moving(progress: TurnProgress, partition: int, until: float, step_s: float) -> None:
    """Turns keep arriving on ``partition`` (what reset the stall timeout before)."""
    off = 0
    while time.monotonic() < until:
        off += 1
        await progress.advance(partition, off)
        await asyncio.sleep(step_s)


def _timed(settings: StreamSettings, progress: TurnProgress, rec: Record,
           move_s: float) -> tuple[float, RecordingWriterDouble, Processor]:
    async def scenario() -> tuple[float, RecordingWriterDouble, Processor]:
        w = RecordingWriterDouble()
        p = Processor(w, settings, turns=TURNS, progress=progress)
        feeder = asyncio.create_task(_moving(progress, 0, time.monotonic() + move_s, 0.02))
        started = time.monotonic()
        await p.handle_control(rec)
        took = time.monotonic() - started
        feeder.cancel()
        return took, w, p
    return asyncio.run(scenario())


def test_an_offset_past_the_partitions_end_is_cut_to_the_end() -> None:
    """Before: partition 0 kept moving, so the delete waited as long as turns came."""
    ends = EndsDouble({0: 5, 1: 0})
    progress = TurnProgress(ends=ends)
    took, w, p = _timed(StreamSettings(control_wait_s=0.5), progress, control({0: 10**9}),
                        move_s=3.0)
    assert took < 1.5  # once offset 5 is stored, not when the turns stop (3 s)
    assert progress.reached(0, 5) and ("delete", ("acme/maya", "a")) in w.calls
    assert p.metrics.control_after_cut.labels("unreachable")._value.get() == 1


def test_a_partition_the_topic_does_not_have_is_not_waited_for() -> None:
    progress = TurnProgress(ends=EndsDouble({0: 3}))
    took, w, _ = _timed(StreamSettings(control_wait_s=5, freshness_s=0.5), progress,
                        control({0: 0, 7: 3}), move_s=0)
    assert took < 1.5 and ("delete", ("acme/maya", "a")) in w.calls


def test_turns_stored_in_time_cost_no_broker_call() -> None:
    """A control whose turns are stored within freshness_s never asks for the ends."""
    async def scenario() -> int:
        ends = EndsDouble({0: 10})
        progress = TurnProgress(ends=ends)
        p = Processor(RecordingWriterDouble(), StreamSettings(control_wait_s=5), turns=TURNS,
                      progress=progress)
        task = asyncio.create_task(p.handle_control(control({0: 10**6})))
        await asyncio.sleep(0.2)
        await progress.advance(0, 10**6)  # stored in time (an offset this high is fine too)
        await task
        return ends.reads

    assert asyncio.run(scenario()) == 0


def test_a_reachable_offset_is_still_waited_for() -> None:
    """The check cuts nothing that can come: a delete still follows its turns."""
    async def scenario() -> tuple[bool, int]:
        ends = EndsDouble({0: 20})
        progress = TurnProgress(ends=ends)
        after, why = await progress.reachable({0: 20}, lambda p: True)
        assert after == {0: 20} and why == []
        w = RecordingWriterDouble()
        p = Processor(w, StreamSettings(control_wait_s=5), turns=TURNS, progress=progress)
        task = asyncio.create_task(p.handle_control(control({0: 20})))
        await asyncio.sleep(0.1)
        waiting = not task.done()
        await progress.advance(0, 20)
        await task
        return waiting, ends.reads

    waiting, reads = asyncio.run(scenario())
    assert waiting and reads == 1  # the second look used the ends it had read


def test_the_ends_are_read_again_only_for_an_offset_past_the_last_read() -> None:
    async def scenario() -> list[int]:
        ends = EndsDouble({0: 10})
        progress = TurnProgress(ends=ends)
        reads = []
        for after in ({0: 4}, {0: 10}, {0: 11}, {0: 2}):
            await progress.reachable(after, lambda p: True)
            reads.append(ends.reads)
        return reads

    assert asyncio.run(scenario()) == [1, 1, 2, 2]


def test_the_total_wait_is_bounded_even_while_the_partition_moves() -> None:
    """A reachable but slow offset: applied after control_wait_max_s, however it moves."""
    progress = TurnProgress(ends=EndsDouble({0: 10**9}))
    settings = StreamSettings(control_wait_s=0.5, control_wait_max_s=0.6)
    took, w, p = _timed(settings, progress, control({0: 10**9}), move_s=3.0)
    assert 0.5 <= took < 2.0 and ("delete", ("acme/maya", "a")) in w.calls
    assert p.metrics.control_after_cut.labels("deadline")._value.get() == 1


def test_without_the_broker_the_wait_is_still_bounded() -> None:
    progress = TurnProgress(ends=EndsDouble(ConnectionError("broker down")))
    settings = StreamSettings(control_wait_s=0.5, control_wait_max_s=0.6)
    took, w, _ = _timed(settings, progress, control({0: 10**9}), move_s=3.0)
    assert took < 2.0 and ("delete", ("acme/maya", "a")) in w.calls


def test_a_negative_partition_or_offset_is_dead_lettered() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    out = asyncio.run(p.handle_control(control({-1: 3})))
    assert [d.reason for d in out.dead] == ["bad_field"] and "'after'" in out.dead[0].detail
    out = asyncio.run(p.handle_control(control({0: -3})))
    assert [d.reason for d in out.dead] == ["bad_field"] and not w.calls


def test_the_absolute_bound_is_a_setting_with_limits() -> None:
    import pytest
    from pydantic import ValidationError

    assert StreamSettings().control_wait_max_s == 900.0
    with pytest.raises(ValidationError, match="control_wait_max_s"):
        StreamSettings(control_wait_max_s=-1)


def test_a_broker_call_that_hangs_as_it_is_cancelled_does_not_hold_the_event() -> None:
    """asyncio.wait_for waits for a cancelled call to wind down; a client stuck in its own
    cleanup then held the control agent (and every close and delete behind it) for good."""
    release = asyncio.Event()

    async def committed_hanging(partitions: list[int]) -> dict[int, int]:
        try:
            await asyncio.sleep(3600)
        finally:  # a close that never returns: ignores the cancellation until released
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue
        return {}

    progress = TurnProgress(committed=committed_hanging)

    async def scenario() -> tuple[bool, float]:
        started = time.monotonic()
        got = await asyncio.wait_for(progress.wait({0: 5}, lambda p: True, timeout_s=0.5,
                                                   poll_s=0.1), 10)
        took = time.monotonic() - started
        release.set()
        await asyncio.sleep(0)
        return got, took

    got, took = asyncio.run(scenario())
    assert got is False and took < 2.0  # gave up at the stall bound, not never
