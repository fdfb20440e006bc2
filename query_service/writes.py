"""Writes, deletes and counts over a local memory, through the core's writer role.

Each function runs in the service's single write thread (the embedded stores
admit one writer).

A batch is atomic with respect to a delete: it lands wholly before or wholly
after it. Written directly, the whole batch is one job on the write thread
and one hold of the memory's write lock (``Memory.append_batch``), so no
delete, from this service or from a stream worker sharing the memory, can
fall between its sessions. Published to Kafka, the stream worker may store a
batch in several pieces, so :class:`UserLocks` orders the two in the service:
a batch is published under its users' locks, and a delete holds its user's
lock from the wait for earlier turns to the end of the delete. Every batch
published before the delete is then wholly stored before it, and none can
start publishing until it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager

from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import (
    DeleteReceipt,
    MemoryReader,
    MemoryStats,
    MemoryWriter,
    ServedMemory,
    SessionNotFound,
)
from memstrata.wire import TurnEvent


def group_by_session(records: Sequence[TurnEvent]) -> dict[tuple[Scope, str], list[TurnEvent]]:
    """Records per session, in arrival order (a batch may mix users and sessions)."""
    out: dict[tuple[Scope, str], list[TurnEvent]] = {}
    for r in records:
        scope = Scope(tenant_id=r.tenant_id, user_id=r.user_id)
        out.setdefault((scope, r.session_id), []).append(r)
    return out


class UserLocks:
    """One asyncio lock per (tenant, user), alive while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[Scope, asyncio.Lock] = {}
        self._users: dict[Scope, int] = {}

    @asynccontextmanager
    async def hold(self, scopes: Iterable[Scope]) -> AsyncIterator[None]:
        """Hold every scope's lock (taken in one sorted order, so two holders never deadlock)."""
        wanted = sorted(set(scopes), key=lambda s: (s.tenant_id, s.user_id))
        for scope in wanted:
            self._users[scope] = self._users.get(scope, 0) + 1
            self._locks.setdefault(scope, asyncio.Lock())
        taken: list[asyncio.Lock] = []
        try:
            for scope in wanted:
                lock = self._locks[scope]
                await lock.acquire()
                taken.append(lock)
            yield
        finally:
            for lock in reversed(taken):
                lock.release()
            for scope in wanted:
                self._users[scope] -= 1
                if not self._users[scope]:
                    del self._users[scope], self._locks[scope]

    def held(self, scope: Scope) -> bool:
        lock = self._locks.get(scope)
        return lock is not None and lock.locked()


class PendingWrites:
    """Message ids this service published to Kafka that the stores do not hold yet, per user.

    A delete must not fall inside a batch the stream worker is still storing.
    The worker's committed offsets are not a sure sign that a record is stored
    (they were seen running ahead of the stores under load), so before deleting,
    the service also waits until the stores hold every message it published for
    that user: read from the stores themselves, the truth.
    """

    def __init__(self) -> None:
        self._pending: dict[Scope, dict[str, set[str]]] = {}

    def add(self, records: Sequence[TurnEvent]) -> None:
        for r in records:
            scope = Scope(tenant_id=r.tenant_id, user_id=r.user_id)
            self._pending.setdefault(scope, {}).setdefault(r.session_id, set()).add(
                r.message_id)

    def snapshot(self, scope: Scope) -> dict[str, set[str]]:
        return {sid: set(ids) for sid, ids in self._pending.get(scope, {}).items()}

    def settle(self, scope: Scope, stored: dict[str, set[str]]) -> int:
        """Drop what the stores now hold; the number of messages still missing."""
        sessions = self._pending.get(scope, {})
        for sid, ids in stored.items():
            if sid in sessions:
                sessions[sid] -= ids
                if not sessions[sid]:
                    del sessions[sid]
        if not sessions:
            self._pending.pop(scope, None)
        return sum(len(v) for v in sessions.values())

    def forget(self, scope: Scope, session_id: str | None = None) -> None:
        if session_id is None:
            self._pending.pop(scope, None)
        else:
            self._pending.get(scope, {}).pop(session_id, None)

    async def wait(self, memory: MemoryReader, scope: Scope, timeout_s: float,
                   run: Callable[[Callable[[], dict[str, set[str]]]],
                                 Awaitable[dict[str, set[str]]]],
                   poll_s: float = 0.05) -> bool:
        """Until the stores hold every pending message of ``scope``; False on timeout.

        ``run(fn)`` runs a store read off the event loop (the service's read pool).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            wanted = self.snapshot(scope)
            if not wanted:
                return True
            stored = await run(lambda: stored_ids(memory, scope, wanted))
            if not self.settle(scope, stored):
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(poll_s)


def stored_ids(memory: MemoryReader, scope: Scope,
               wanted: dict[str, set[str]]) -> dict[str, set[str]]:
    """Of ``wanted`` (session -> message ids), those the stores hold (read as L3 turns)."""
    out: dict[str, set[str]] = {}
    for sid, ids in wanted.items():
        try:
            turns = memory.raw(scope, sid)
        except SessionNotFound:  # none of its turns stored yet
            turns = []
        out[sid] = ids & {m for t in turns for m in t.source_ids}
    return out


def append_direct(memory: ServedMemory, records: Sequence[TurnEvent]) -> int:
    """Append every record in one write (``append_batch``); flush; return duplicates ignored."""
    items = []
    for group in group_by_session(records).values():
        # The group's first date and labels, later events filling what is missing; what
        # the session already holds is kept by the memory (on every write path).
        meta = group[0].meta()
        for r in group[1:]:
            meta = meta.filled_from(r.meta())
        messages = [Message(role=r.role, content=r.content, speaker=r.speaker,
                            source_id=r.message_id) for r in group]
        items.append((meta, messages))
    reports = memory.append_batch(items)  # one write: no delete falls between its sessions
    memory.flush()
    return sum(r.duplicates for r in reports)


def close_session(memory: ServedMemory, scope: Scope, session_id: str) -> int:
    """Build the session's final windows; the number of units written."""
    memory.session(scope, session_id)  # SessionNotFound for an unknown session
    report = memory.close_session(scope, session_id)
    memory.flush()
    return len(report.units_written)


class DeleteIncomplete(RuntimeError):
    """A store kept data after a delete and its retry; the message names the stores."""


def delete(memory: MemoryWriter, scope: Scope, session_id: str | None) -> DeleteReceipt:
    """Delete in every store and flush, so that no later search sees the data.

    A delete that fails part way is retried once (the core finishes it on retry);
    if a store still fails, the call fails and says which store, never acknowledges.
    """
    receipt = memory.delete(scope, session_id)
    if not receipt.complete:
        retry = memory.delete(scope, session_id)
        for store, n in retry.removed.items():
            receipt.removed[store] = receipt.removed.get(store, 0) + n
        receipt.errors, receipt.complete = retry.errors, retry.complete
    if not receipt.complete:
        raise DeleteIncomplete("delete incomplete, retry to finish: "
                               + ", ".join(sorted(receipt.errors)) + " failed")
    memory.flush()
    return receipt


def stats(memory: MemoryReader, tenant: str) -> MemoryStats:
    return memory.stats(tenant)
