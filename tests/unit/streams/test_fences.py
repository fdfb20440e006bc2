"""A delete's turns handed again after it is applied stay deleted (streams.fences).

Seen over tansu: a worker that took a killed worker's partitions applied a user's
delete, then Faust handed it the user's earlier turns a second time (its recovery
seeks to the committed offsets) and they were stored again.
"""

from __future__ import annotations

import asyncio

from memstrata.limits import TurnLimits
from memstrata.model import Scope
from memstrata.wire import ControlEvent
from streams import topics
from streams.events import utcnow
from streams.fences import DeleteFences
from streams.processor import Processor
from streams.records import Record
from streams.settings import StreamSettings
from tests.unit.streams.doubles import RecordingWriterDouble
from tests.unit.streams.test_processor import MAYA, records, turn

TURNS = TurnLimits()
OTHER = Scope(tenant_id="acme", user_id="leo")


def test_a_fence_covers_the_turns_before_the_delete_and_nothing_after() -> None:
    fences = DeleteFences()
    fences.note(MAYA, None, {0: 5, 1: 2})
    assert fences.covers(MAYA, "a", 0, 4) and fences.covers(MAYA, "z", 1, 1)
    assert not fences.covers(MAYA, "a", 0, 5)  # produced after the delete: new
    assert not fences.covers(MAYA, "a", 2, 0)  # a partition the delete did not name
    assert not fences.covers(OTHER, "a", 0, 0)  # another user
    fences.note(OTHER, "s", {0: 9})  # a session's delete covers that session only
    assert fences.covers(OTHER, "s", 0, 8) and not fences.covers(OTHER, "t", 0, 8)
    fences.note(OTHER, "s", {0: 3})  # an older delete read late never lowers a fence
    assert fences.covers(OTHER, "s", 0, 8)


def test_fences_are_bounded_and_cleared_when_offsets_start_again() -> None:
    fences = DeleteFences(limit=2)
    for user in ("u1", "u2", "u3"):
        fences.note(Scope(tenant_id="t", user_id=user), None, {0: 10})
    assert len(fences) == 2
    assert not fences.covers(Scope(tenant_id="t", user_id="u1"), "s", 0, 1)  # the oldest went
    assert fences.covers(Scope(tenant_id="t", user_id="u3"), "s", 0, 1)
    fences.clear()
    assert len(fences) == 0


def test_turns_handed_again_after_the_delete_are_not_stored_and_new_ones_are() -> None:
    async def scenario() -> tuple[RecordingWriterDouble, Processor]:
        w = RecordingWriterDouble()
        p = Processor(w, StreamSettings(), turns=TURNS)
        first = records(turn("a", 1), turn("a", 2, "assistant"), partition=0, start=0)
        await p.handle_turns(first)
        ev = ControlEvent(type="delete_user", tenant_id="acme", user_id="maya",
                          session_id=None, ts=utcnow(), after={0: 2})
        await p.handle_control(Record(topics.CONTROL, 0, 0, ev.key, ev.to_bytes()))
        # Handed again (offsets 0-1, before the delete), then a new turn at offset 2.
        await p.handle_turns(first + records(turn("a", 3), partition=0, start=2))
        return w, p

    w, p = asyncio.run(scenario())
    assert [m.source_id for m in w.messages.get((MAYA, "a"), [])] == ["a#3"]
    assert p.metrics.records_fenced._value.get() == 2
    assert p.progress.done[0] == 3  # the fenced turns count as handled
