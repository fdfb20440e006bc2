"""``memstrata.kafka.ranges.fetch_ranges``: the one loop that reads offset ranges again
(the delete's replay, the recycle's dead-letter carry-over, a close's unit count),
against a consumer double."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from memstrata.kafka.ranges import fetch_ranges


@dataclass(frozen=True)
class Msg:
    offset: int


@dataclass
class FakeConsumer:
    """A test double of aiokafka's consumer: ``logs`` per partition, ``gaps`` are offsets
    the log no longer holds (skipped, as compaction does), ``per_fetch`` records a call."""

    logs: dict[str, int]
    gaps: set[int] = field(default_factory=set)
    per_fetch: int = 2
    stalled: bool = False
    pos: dict[str, int] = field(default_factory=dict)

    def assign(self, tps: list[str]) -> None:
        self.assigned = list(tps)

    def seek(self, tp: str, offset: int) -> None:
        self.pos[tp] = offset

    async def getmany(self, *tps: str, timeout_ms: int) -> dict[str, list[Msg]]:
        await asyncio.sleep(0)
        out: dict[str, list[Msg]] = {}
        for tp in tps:
            if self.stalled:
                continue
            start = self.pos[tp]
            stop = min(self.logs[tp], start + self.per_fetch)
            msgs = [Msg(o) for o in range(start, stop) if o not in self.gaps]
            self.pos[tp] = stop
            if msgs:
                out[tp] = msgs
        return out

    async def position(self, tp: str) -> int:
        return self.pos[tp]


def test_each_range_is_read_from_start_to_stop_and_no_further() -> None:
    consumer = FakeConsumer({"a": 10, "b": 10})
    got, todo = asyncio.run(fetch_ranges(consumer, {"a": (3, 7), "b": (0, 1), "c": (5, 5)}))
    assert [m.offset for m in got["a"]] == [3, 4, 5, 6]
    assert [m.offset for m in got["b"]] == [0]
    assert "c" not in got and todo == set()  # an empty range is not assigned
    assert consumer.assigned == ["a", "b"]


def test_a_range_whose_last_records_are_gone_ends_by_the_position() -> None:
    consumer = FakeConsumer({"a": 6}, gaps={4, 5})
    got, todo = asyncio.run(fetch_ranges(consumer, {"a": (0, 6)}))
    assert [m.offset for m in got["a"]] == [0, 1, 2, 3] and todo == set()


def test_a_partition_that_never_answers_is_named_after_the_timeout() -> None:
    consumer = FakeConsumer({"a": 4}, stalled=True)
    got, todo = asyncio.run(fetch_ranges(consumer, {"a": (0, 4)}, timeout_s=0.05))
    assert got["a"] == [] and todo == {"a"}
