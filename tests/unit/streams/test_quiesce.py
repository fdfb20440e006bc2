"""A stopping worker finishes its work before it leaves the group, and starts none after.

Once a worker has left, another may own its partitions; a write it still makes
of a session races the new owner's (the stale view can win). These pin the
order :meth:`Processor.quiesce` promises, over the writer double.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from streams.processor import Processor, Quiesced
from streams.settings import StreamSettings
from tests.unit.streams.doubles import RecordingWriterDouble
from tests.unit.streams.test_processor import TURNS, control, old, records, turn


def _appends(w: RecordingWriterDouble) -> list[Any]:
    return [c for c in w.calls if c[0] in ("append", "hold")]


def test_held_windows_are_built_by_quiesce_and_no_batch_starts_after() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
    asyncio.run(p.handle_turns(records(old("a", 1), old("b", 1))))
    assert set(k[1] for k in p.held) == {"a", "b"}  # behind the topic: windows held

    notes = asyncio.run(p.quiesce())
    assert {n.session_id for n in notes} == {"a", "b"} and not p.held

    before = list(w.calls)
    with pytest.raises(Quiesced):
        asyncio.run(p.handle_turns(records(turn("c", 1), start=2)))
    with pytest.raises(Quiesced):
        asyncio.run(p.handle_controls([control("close_session", "a", {})]))
    assert w.calls == before  # nothing written, nothing acknowledged: the next owner's


def test_quiesce_waits_for_the_batch_in_hand() -> None:
    release = threading.Event()

    class SlowWriterDouble(RecordingWriterDouble):
        """Blocks its first append until the test lets it go (a slow store)."""

        def append_batch(self, *args: Any, **kwargs: Any) -> Any:
            release.wait(5)
            return super().append_batch(*args, **kwargs)

    w = SlowWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)

    async def go() -> tuple[bool, Any]:
        batch = asyncio.ensure_future(p.handle_turns(records(turn("a", 1))))
        await asyncio.sleep(0.05)  # the batch holds the store
        stop = asyncio.ensure_future(p.quiesce())
        await asyncio.sleep(0.1)
        finished_early = stop.done()
        release.set()
        await asyncio.gather(batch, stop)
        return finished_early, batch.result()

    finished_early, out = asyncio.run(go())
    assert not finished_early  # it waited for the store
    assert [n.session_id for n in out.l0] == ["a"]  # and the batch in hand was stored


def test_a_worker_stopped_with_windows_still_held_leaves_them_to_the_next_owner() -> None:
    """When quiesce did not finish (bounded), close() must not build them after leaving."""
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
    asyncio.run(p.handle_turns(records(old("a", 1), old("b", 1))))
    p.quiescing = True  # what a timed-out quiesce leaves
    before = _appends(w)
    p.close()
    assert _appends(w) == before


def test_a_worker_stopped_without_quiesce_still_builds_its_held_windows() -> None:
    """The single-process shape (no one else to own the partitions) keeps its turns indexed."""
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
    asyncio.run(p.handle_turns(records(old("a", 1), old("b", 1))))
    before = len(_appends(w))
    p.close()
    assert len(_appends(w)) > before and not p.held
