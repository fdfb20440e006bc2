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
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from memstrata.layers.lazy import SessionNotFound
from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import DeleteReceipt, MemoryStats
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


def append_direct(memory: Any, records: Sequence[TurnEvent]) -> int:
    """Append every record in one write (``append_batch``); flush; return duplicates ignored."""
    items = []
    for (scope, session_id), group in group_by_session(records).items():
        date = next((r.session_date for r in group if r.session_date is not None), None)
        labels = next((r.labels for r in group if r.labels), {})
        try:  # as on the turns topic: the session's first date and labels stick
            stored = memory.session(scope, session_id)
            date, labels = stored.session_date or date, stored.labels or labels
        except SessionNotFound:
            pass
        meta = SessionMeta(scope=scope, session_id=session_id, session_date=date,
                           labels=labels)
        messages = [Message(role=r.role, content=r.content, speaker=r.speaker,
                            source_id=r.message_id) for r in group]
        items.append((meta, messages))
    batch = getattr(memory, "append_batch", None)
    if batch is not None:  # one hold of the write lock for the whole batch
        reports = list(batch(items))
    else:
        reports = [memory.append_messages(meta, messages) for meta, messages in items]
    memory.flush()
    return sum(r.duplicates for r in reports)


def close_session(memory: Any, scope: Scope, session_id: str) -> int:
    """Build the session's final windows; the number of units written."""
    memory.session(scope, session_id)  # SessionNotFound for an unknown session
    report = memory.close_session(scope, session_id)
    memory.flush()
    return len(report.units_written)


class DeleteIncomplete(RuntimeError):
    """A store kept data after a delete and its retry; the message names the stores."""


def delete(memory: Any, scope: Scope, session_id: str | None) -> DeleteReceipt:
    """Delete in every store and flush, so that no later search sees the data.

    A delete that fails part way is retried once (the core finishes it on retry);
    if a store still fails, the call fails and says which store, never acknowledges.
    """
    receipt: DeleteReceipt = memory.delete(scope, session_id)
    if not receipt.complete:
        retry: DeleteReceipt = memory.delete(scope, session_id)
        for store, n in retry.removed.items():
            receipt.removed[store] = receipt.removed.get(store, 0) + n
        receipt.errors, receipt.complete = retry.errors, retry.complete
    if not receipt.complete:
        raise DeleteIncomplete("delete incomplete, retry to finish: "
                               + ", ".join(sorted(receipt.errors)) + " failed")
    memory.flush()
    return receipt


def stats(memory: Any, tenant: str) -> MemoryStats:
    return memory.stats(tenant)  # type: ignore[no-any-return]
