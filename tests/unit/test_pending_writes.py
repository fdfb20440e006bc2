"""``PendingWrites`` holds only what is in flight (issue 31, item 4).

It used to keep every acknowledged message id until its user was deleted: about
87 bytes plus the id per message, for ever. Here it is filled with N messages,
the stores (a test double) then hold them, and a sweep must bring both its
entry count and its memory back to about nothing; entries the stores never
hold leave after ``keep_s`` or, oldest first, past ``max_entries``.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from memstrata.model import Message, Scope, Turn
from memstrata.roles import SessionNotFound
from memstrata.wire import TurnEvent
from query_service.writes import PendingWrites

N = 20_000


def _events(user: str, n: int, sessions: int = 50) -> list[TurnEvent]:
    ts = datetime(2024, 5, 1, tzinfo=timezone.utc)
    return [TurnEvent(tenant_id="acme", user_id=user, session_id=f"s{i % sessions}",
                      message_id=f"m{i:06d}", role="user", content=f"Message number {i}.",
                      ts=ts) for i in range(n)]


class StoresDouble:
    """TEST DOUBLE of a memory reader: ``raw`` returns the turns a test says are stored."""

    def __init__(self) -> None:
        self.turns: dict[tuple[Scope, str], list[Turn]] = {}

    def store(self, events: list[TurnEvent]) -> None:
        for e in events:
            key = (Scope(tenant_id=e.tenant_id, user_id=e.user_id), e.session_id)
            turns = self.turns.setdefault(key, [])
            turns.append(Turn(index=len(turns) + 1, messages=[Message(
                role=e.role, content=e.content, source_id=e.message_id)]))

    def raw(self, scope: Scope, session_id: str, turns: Any = None) -> list[Turn]:
        if (scope, session_id) not in self.turns:
            raise SessionNotFound(session_id)
        return self.turns[(scope, session_id)]


async def _inline(fn: Callable[[], Any]) -> Any:
    return fn()


def test_entries_and_memory_return_to_about_nothing_once_stored():
    events = _events("kim", N)
    half, stores = StoresDouble(), StoresDouble()  # filled before the measure starts
    half.store(events[: N // 2])
    stores.store(events)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        pending = PendingWrites(max_entries=10 * N)
        pending.add(events)
        full = tracemalloc.get_traced_memory()[0] - base
        assert len(pending) == N
        assert full > 50 * N  # what it holds while in flight is real memory

        assert asyncio.run(pending.sweep(half, _inline)) == N - N // 2
        assert asyncio.run(pending.sweep(stores, _inline)) == 0
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(pending) == 0 and not pending.snapshot(Scope(tenant_id="acme", user_id="kim"))
    assert left < 20_000, f"{left} bytes left after {N} messages were stored (was {full})"


def test_entries_never_stored_leave_after_keep_s_or_past_the_cap():
    now = [0.0]
    pending = PendingWrites(max_entries=100, keep_s=60.0, clock=lambda: now[0])
    pending.add(_events("ann", 30))
    now[0] = 30.0
    pending.add(_events("bob", 90))  # 120 in flight: the 20 oldest (ann's) go
    assert len(pending) == 100
    ann = pending.snapshot(Scope(tenant_id="acme", user_id="ann"))
    assert sum(len(v) for v in ann.values()) == 10
    now[0] = 61.0  # ann's last ten are now older than keep_s
    asyncio.run(pending.sweep(StoresDouble(), _inline))
    assert len(pending) == 90 and not pending.snapshot(Scope(tenant_id="acme", user_id="ann"))
    now[0] = 91.0
    pending.expire()
    assert len(pending) == 0


def test_lookup_gives_each_in_flight_message_with_its_content_digest():
    pending = PendingWrites()
    a, b = _events("cy", 2, sessions=1)
    pending.add([a, b])
    seen = pending.lookup(Scope(tenant_id="acme", user_id="cy"), "s0")
    assert set(seen) == {"m000000", "m000001"} and seen["m000000"] != seen["m000001"]
    pending.forget(Scope(tenant_id="acme", user_id="cy"), "s0")
    assert len(pending) == 0
