"""What a delete covers, so that its turns delivered again are not stored again.

Delivery is at least once: after a rebalance Faust may hand a partition's
records again from the group's committed offset (its recovery seeks there once
the tables are read), and a delete applied in between would then be undone by
the turns it deleted (seen: a survivor applied a delete, then was handed the
user's earlier turns a second time and stored them). A delete's ``after`` says
exactly which turns it follows, per partition; a turn of the deleted user or
session at an offset below it came before the delete, so it is never stored
again. Turns at or past ``after`` are new and are stored as usual.

Kept free of I/O and bounded (the oldest fence goes first); cleared when the
broker numbers its offsets from 0 again (an embedded broker's recycle).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from memstrata.model import Scope

__all__ = ["DeleteFences"]


class DeleteFences:
    """Per deleted user (``session_id`` None) or session: the delete's ``after`` offsets."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self._after: OrderedDict[tuple[Scope, str | None], dict[int, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._after)

    def note(self, scope: Scope, session_id: str | None, after: Mapping[int, int]) -> None:
        """A delete was applied after the turns before ``after`` (partition -> offset)."""
        if not after:
            return
        key = (scope, session_id)
        merged = self._after.pop(key, {})  # moved to the newest end
        for p, o in after.items():
            merged[p] = max(merged.get(p, 0), o)
        self._after[key] = merged
        while len(self._after) > self.limit:
            self._after.popitem(last=False)

    def covers(self, scope: Scope, session_id: str, partition: int, offset: int) -> bool:
        """Whether a delete already applied came after this turn (so it stays deleted)."""
        if not self._after:  # every turn of every batch asks: no hashing while none exist
            return False
        for key in ((scope, None), (scope, session_id)):
            after = self._after.get(key)
            if after is not None and offset < after.get(partition, -1):
                return True
        return False

    def clear(self) -> None:
        self._after.clear()
