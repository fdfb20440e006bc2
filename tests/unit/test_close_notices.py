"""The units a close wrote, counted from the L0 topic's close notices of the session
(``query_service.controls.TopicControls._count_closes``), against a consumer double."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from types import SimpleNamespace

from query_service.controls import TopicControls


@dataclass(frozen=True)
class Note:
    offset: int
    key: bytes
    value: bytes


class NoticesConsumerDouble:
    """Not a consumer: one partition's L0 notices, two per fetch, from where it was sent."""

    def __init__(self, notes: list[Note]) -> None:
        self.notes = notes
        self.pos: dict[str, int] = {}
        self.unsubscribed = False

    def assign(self, tps: list[str]) -> None:
        pass

    def seek(self, tp: str, offset: int) -> None:
        self.pos[tp] = offset

    async def getmany(self, *tps: str, timeout_ms: int) -> dict[str, list[Note]]:
        out = {}
        for tp in tps:
            start = self.pos[tp]
            out[tp] = self.notes[start:start + 2]
            self.pos[tp] = start + len(out[tp])
        return {tp: m for tp, m in out.items() if m}

    async def position(self, tp: str) -> int:
        return self.pos[tp]

    def unsubscribe(self) -> None:
        self.unsubscribed = True


def _note(offset: int, key: bytes, cause: str, units: int) -> Note:
    return Note(offset, key, json.dumps({"cause": cause,
                                         "unit_ids": [f"u{i}" for i in range(units)]}).encode())


def test_only_the_sessions_close_notices_in_the_range_are_counted() -> None:
    mine, other = b"acme/maya/s1", b"acme/maya/s2"
    notes = [_note(0, mine, "close", 9),  # before the range
             _note(1, mine, "close", 2), _note(2, other, "close", 5),
             _note(3, mine, "append", 4), _note(4, mine, "close", 1),
             _note(5, mine, "close", 7)]  # at the range's stop: after it
    reader = NoticesConsumerDouble(notes)
    controls = SimpleNamespace(_consumer=reader)
    units = asyncio.run(TopicControls._count_closes(controls, {"l0-0": (1, 5)}, mine))  # type: ignore[arg-type]
    assert units == 3 and reader.unsubscribed
