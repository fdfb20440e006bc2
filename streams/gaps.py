"""Records the consumer skipped: never stored, never committed past.

The turns topic has no compaction and no transactions, so within a partition
its offsets come one after another. Yet after a rebalance or a restart the
worker was seen (tests over tansu, about one run in ten under load) to be
handed a partition's records with one missing: a user message stored without
its turn's reply, or the last record of a partition never delivered, so every
close after it waited its full bound. Faust then either commits past the hole
(it takes a jump in offsets for a compacted topic and counts the hole as done)
or never commits again.

:class:`SkipGuard` is the check, kept free of I/O: per partition, the next
offset the agent must see. A record past it is held back (not stored, not
acknowledged) and the consumer is sent back to the missing offset once; what
follows comes again in order, and re-deliveries are harmless (writes are
idempotent by message id). :meth:`SkipGuard.stalled` names the partitions
whose next record never came although the topic has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["SkipGuard"]


@dataclass
class SkipGuard:
    """Per partition of one topic: the next offset due, and the rewinds asked for."""

    #: The next offset the agent must see, per partition (unknown: not yet seen).
    next: dict[int, int] = field(default_factory=dict)
    #: Partitions sent back to an offset, until that offset arrives.
    rewinding: dict[int, int] = field(default_factory=dict)
    #: Per partition, the next offset when :meth:`stalled` last looked (a stall is two
    #: looks without progress).
    _seen: dict[int, int] = field(default_factory=dict)

    def reset(self) -> None:
        """A rebalance or a recycle: the consumer starts again from the committed offsets."""
        self.next.clear()
        self.rewinding.clear()
        self._seen.clear()

    def start(self, committed: Mapping[int, int]) -> None:
        """Partitions first seen since the reset begin at the group's committed offset."""
        for p, offset in committed.items():
            self.next.setdefault(p, offset)

    def cap(self, committed: Mapping[int, int]) -> dict[int, int]:
        """The group's committed offsets, none past what this worker has been handed.

        Faust commits past a hole it saw (taking it for compaction), before the
        records are fetched again; a delete that trusted that offset would be
        applied before them and split the batch they belong to.
        """
        return {p: min(o, self.next[p]) if p in self.next else o
                for p, o in committed.items()}

    def admit(self, records: Sequence[tuple[int, int]]) -> tuple[list[bool], dict[int, int]]:
        """For records (partition, offset) in arrival order: which to handle now, and the
        partitions to send back (partition -> the missing offset), each asked once."""
        keep: list[bool] = []
        rewind: dict[int, int] = {}
        for p, offset in records:
            due = self.next.get(p)
            if due is None or offset <= due:
                # First seen, in order, or delivered again (stored already: idempotent).
                keep.append(True)
                if due is None or offset == due:
                    self.next[p] = offset + 1
                    if self.rewinding.get(p) == offset:
                        del self.rewinding[p]
                continue
            keep.append(False)  # past a hole: held back until the hole is filled
            if p not in self.rewinding:
                self.rewinding[p] = due
                rewind[p] = due
        return keep, rewind

    def stalled(self, ends: Mapping[int, int], positions: Mapping[int, int],
                delivered: Mapping[int, int]) -> dict[int, int]:
        """Partitions whose next record the topic holds (``ends``: end offsets), the
        consumer has gone past (``positions``: its next fetch offset) and the stream was
        never handed (``delivered``: the last offset it got; a record waiting in a
        buffer has been handed), at two looks in a row: partition -> where to go back."""
        out: dict[int, int] = {}
        for p, due in self.next.items():
            end, position = ends.get(p), positions.get(p)
            handed = delivered.get(p, -1)
            if (end is None or position is None or end <= due or position <= due
                    or handed >= due):
                self._seen.pop(p, None)
                continue
            if self._seen.get(p) == due and p not in self.rewinding:
                out[p] = due
                self.rewinding[p] = due
            self._seen[p] = due
        return out
