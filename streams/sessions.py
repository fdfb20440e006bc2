"""The worker's session table: its keys, and the index of open sessions the idle timer reads.

Keys. A table key is the JSON list ``["tenant","user","session"]``: ids may
hold ``/``, so the old ``tenant/user/session`` text made tenant ``acme`` user
``x/y`` and tenant ``acme/x`` user ``y`` one key. Ids cannot hold ``[``, so an
old key (written before this format) is told apart by its first character and
is still read (:func:`parse_key`, :meth:`streams.processor.Processor` moves it
to the new key when it rebuilds the index). The changelog partition of an
entry is the partition of its session's turns, which is its user's
(``tenant/user/``, ADR 0005; :func:`route_of`): an entry moves with its partition on a rebalance.

Open sessions. :class:`OpenSessions` holds the sessions noted since their last
close, ordered by their last event time, so a sweep visits the sessions that
are due (and those whose entry moved since they were queued), never the ones
closed long ago or still active.
"""

from __future__ import annotations

import heapq
import itertools
import json

from memstrata.model import Scope, is_identifier
from memstrata.wire import user_key

__all__ = ["OpenSessions", "is_legacy_key", "parse_key", "route_of", "session_key"]


def session_key(scope: Scope, session_id: str) -> str:
    """The table key of a session: a JSON list, one item per id (no separator to collide)."""
    return json.dumps([scope.tenant_id, scope.user_id, session_id], separators=(",", ":"))


def is_legacy_key(key: str) -> bool:
    """Whether ``key`` is an old ``tenant/user/session`` key (ids never start with ``[``)."""
    return not key.startswith("[")


def parse_key(key: str) -> tuple[Scope, str] | None:
    """The session a new-form key names (None: an old key, or not a session key).

    An old key cannot be split reliably (ids may hold ``/``); its value's
    ``tenant_id``, ``user_id`` and ``session_id`` say which session it is.
    """
    if is_legacy_key(key):
        return None
    try:
        parts = json.loads(key)
    except ValueError:
        return None
    if not (isinstance(parts, list) and len(parts) == 3
            and all(isinstance(p, str) and is_identifier(p) for p in parts)):
        return None
    return Scope(tenant_id=parts[0], user_id=parts[1]), parts[2]


def route_of(key: str) -> bytes:
    """The record key of the session's turns: what places the entry on their partition.

    A new-form key routes by its user (``tenant/user/``, ADR 0005: a user's
    sessions share a partition). An old key was the session's record key
    before the re-keying and keeps the placement it had (the migration in
    ADR 0005 drains and closes such sessions before the switch).
    """
    got = parse_key(key)
    if got is None:
        return key.encode()
    scope, _ = got
    return user_key(scope.tenant_id, scope.user_id)


class OpenSessions:
    """Sessions noted since their last close, by last event time (wall clock, seconds).

    A heap holds one live entry per session, queued at the time it had then;
    a session that saw events since is queued again at its new time when its
    entry comes up, so :meth:`due` pops only what may be due. ``visited``
    counts the entries popped (what a sweep costs).
    """

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        #: The time of each session's live heap entry (an entry with another time is stale).
        self._queued: dict[str, float] = {}
        #: (time, tie-breaker, session): equal times compare by a number, not by key text.
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self.visited = 0

    def __len__(self) -> int:
        return len(self._last)

    def __contains__(self, key: object) -> bool:
        return key in self._last

    def last(self, key: str) -> float | None:
        return self._last.get(key)

    def touch(self, key: str, when: float) -> None:
        """The session had an event at ``when`` (an older time never moves it back)."""
        cur = self._last.get(key)
        last = when if cur is None else max(cur, when)
        self._last[key] = last
        queued = self._queued.get(key)
        if queued is None or last < queued:
            heapq.heappush(self._heap, (last, next(self._seq), key))
            self._queued[key] = last

    def discard(self, key: str) -> float | None:
        """The session is closed or gone; its last time, if it was open."""
        return self._last.pop(key, None)

    def due(self, cutoff: float, limit: int) -> tuple[list[tuple[str, float]], bool]:
        """Pop the sessions whose last event is at or before ``cutoff``, visiting at most
        ``limit`` entries; (those sessions with their times, whether more may be due).

        The sessions returned leave the index: the caller closes them (a session
        that sees an event meanwhile is touched, so it is open again).
        """
        out: list[tuple[str, float]] = []
        heap = self._heap
        for _ in range(limit):
            if not heap or heap[0][0] > cutoff:
                return out, False
            queued, _, key = heapq.heappop(heap)
            self.visited += 1
            if self._queued.get(key) != queued:
                continue  # stale: the session was closed and queued again earlier
            del self._queued[key]
            last = self._last.get(key)
            if last is None:
                continue  # closed since it was queued
            if last > cutoff:  # events since: queued again at its new time
                heapq.heappush(heap, (last, next(self._seq), key))
                self._queued[key] = last
                continue
            del self._last[key]
            out.append((key, last))
        return out, bool(heap) and heap[0][0] <= cutoff
