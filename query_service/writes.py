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
import functools
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from memstrata.model import Scope
from memstrata.roles import (
    DeleteReceipt,
    MemoryReader,
    MemoryStats,
    MemoryWriter,
    ServedMemory,
    SessionNotFound,
)
from memstrata.wire import TurnEvent

log = logging.getLogger(__name__)


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


def message_digest(role: str, content: str, speaker: str | None) -> int:
    """A short fingerprint of what a message says (8 bytes): a replay matches it exactly."""
    h = hashlib.blake2b(digest_size=8)
    for part in (role, speaker or "", content):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "big")


def event_digest(r: TurnEvent) -> int:
    return message_digest(r.role, r.content, r.speaker)


class PendingWrites:
    """Messages this service published that the stores do not hold yet: only those in flight.

    A delete must not fall inside a batch the stream worker is still storing,
    and a replay of a message still on its way must count as a duplicate. The
    worker's committed offsets are not a sure sign that a record is stored (they
    were seen running ahead of the stores under load), so the stores themselves
    say when an entry may go. An entry leaves when the stores are seen to hold
    it (:meth:`settle`: at the next Ingest of its session, at each :meth:`sweep`,
    and while a delete waits), when its user or session is deleted, when it is
    older than ``keep_s`` (the worker refused it, or is that far behind), and,
    oldest first, when more than ``max_entries`` are in flight. Memory is then
    bounded by what is in flight, never by what was ever published.
    """

    def __init__(self, max_entries: int = 100_000, keep_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self.keep_s = keep_s
        self._clock = clock
        #: scope -> session -> message id -> content digest
        self._pending: dict[Scope, dict[str, dict[str, int]]] = {}
        #: One Scope object per user in flight (its entries' keys share it).
        self._scopes: dict[Scope, Scope] = {}
        #: (scope, session, message id) -> when it was added, oldest first
        self._since: OrderedDict[tuple[Scope, str, str], float] = OrderedDict()
        #: Entries dropped unsettled (too old or past ``max_entries``), for the log.
        self.dropped = 0
        #: The most entries held since the table was last rebuilt (dicts never shrink).
        self._high = 0
        self._sweeping = False
        self._last_sweep = 0.0

    def __len__(self) -> int:
        return len(self._since)

    def add(self, records: Sequence[TurnEvent]) -> None:
        now = self._clock()
        scopes: dict[tuple[str, str], Scope] = {}
        for r in records:
            scope = scopes.get((r.tenant_id, r.user_id))
            if scope is None:  # one Scope object per user, shared by its entries
                scope = Scope(tenant_id=r.tenant_id, user_id=r.user_id)
                scope = self._scopes.setdefault(scope, scope)
                scopes[(r.tenant_id, r.user_id)] = scope
            self._pending.setdefault(scope, {}).setdefault(r.session_id, {})[
                r.message_id] = event_digest(r)
            key = (scope, r.session_id, r.message_id)
            self._since[key] = now
            self._since.move_to_end(key)
        self._high = max(self._high, len(self._since))
        self.expire()

    def discard(self, records: Sequence[TurnEvent]) -> None:
        """Drop these records' entries (stored, or refused and never to be stored)."""
        for r in records:
            self._drop(Scope(tenant_id=r.tenant_id, user_id=r.user_id), r.session_id,
                       r.message_id)
        self._compact()

    def holds(self, r: TurnEvent) -> bool:
        """Whether the record's message is still in flight."""
        return r.message_id in self._pending.get(
            Scope(tenant_id=r.tenant_id, user_id=r.user_id), {}).get(r.session_id, {})

    def lookup(self, scope: Scope, session_id: str) -> dict[str, int]:
        """Message id -> digest of the session's messages in flight (a copy)."""
        return dict(self._pending.get(scope, {}).get(session_id, {}))

    def snapshot(self, scope: Scope) -> dict[str, set[str]]:
        return {sid: set(ids) for sid, ids in self._pending.get(scope, {}).items()}

    def settle(self, scope: Scope, stored: dict[str, set[str]]) -> int:
        """Drop what the stores now hold; the number of the user's messages still missing."""
        for sid, ids in stored.items():
            for mid in ids:
                self._drop(scope, sid, mid)
        self._compact()
        return sum(len(v) for v in self._pending.get(scope, {}).values())

    def forget(self, scope: Scope, session_id: str | None = None) -> None:
        sessions = self._pending.get(scope, {})
        for sid in [session_id] if session_id is not None else list(sessions):
            for mid in list(sessions.get(sid, ())):
                self._drop(scope, sid, mid)
        self._compact()

    def expire(self) -> None:
        """Drop entries older than ``keep_s``, then the oldest past ``max_entries``."""
        limit = self._clock() - self.keep_s
        while self._since:
            key, since = next(iter(self._since.items()))
            if since > limit and len(self._since) <= self.max_entries:
                break
            self._drop(*key)
            self.dropped += 1
        self._compact()

    def _compact(self) -> None:
        """Rebuild the tables once they hold a quarter of their peak: a dict keeps its
        largest size after deletes, so an emptied table would still hold the peak."""
        if self._high > 1024 and len(self._since) < self._high // 4:
            self._since = OrderedDict(self._since)
            self._pending = {scope: {sid: dict(ids) for sid, ids in sessions.items()}
                             for scope, sessions in self._pending.items()}
            self._scopes = {scope: scope for scope in self._pending}
            self._high = len(self._since)

    def _drop(self, scope: Scope, session_id: str, message_id: str) -> None:
        self._since.pop((scope, session_id, message_id), None)
        sessions = self._pending.get(scope)
        if sessions is None:
            return
        ids = sessions.get(session_id)
        if ids is None:
            return
        ids.pop(message_id, None)
        if not ids:
            del sessions[session_id]
            if not sessions:
                del self._pending[scope]
                self._scopes.pop(scope, None)

    def sweep_due(self, every_s: float) -> bool:
        """Whether a :meth:`sweep` should start now (something in flight, none running)."""
        return (bool(self._since) and not self._sweeping
                and self._clock() - self._last_sweep >= every_s)

    async def sweep(self, memory: MemoryReader,
                    run: Callable[[Callable[[], Any]], Awaitable[Any]]) -> int:
        """Settle every user's entries against the stores (one read job); the number left.

        ``run(fn)`` runs a store read off the event loop (the service's read pool).
        """
        if self._sweeping:
            return len(self)
        self._sweeping = True
        try:
            self.expire()
            wanted = {scope: self.snapshot(scope) for scope in self._pending}
            if wanted:
                stored: dict[Scope, dict[str, set[str]]] = await run(
                    lambda: {scope: stored_ids(memory, scope, w) for scope, w in wanted.items()})
                for scope, ids in stored.items():
                    self.settle(scope, ids)
        finally:
            self._sweeping = False
            self._last_sweep = self._clock()
        if self.dropped:
            log.warning("%d published messages were never seen stored within %g s (or past "
                        "%d in flight) and are no longer tracked: the stream worker refused "
                        "them (see the DLQ) or is that far behind", self.dropped, self.keep_s,
                        self.max_entries)
            self.dropped = 0
        return len(self)

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
            stored = await run(functools.partial(stored_ids, memory, scope, wanted))
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


class ChangedMessage(ValueError):
    """A message id its session already holds (or has in flight) came again with other content.

    Refused rather than dropped: the caller would otherwise be told the change
    was accepted while the memory keeps the first version.
    """


@dataclass
class Sorted:
    """What of a request is new, and how many of its events change nothing."""

    new: list[TurnEvent]
    duplicates: int
    #: The request field of each new event (``events[3]``), for errors about it.
    fields: list[str]
    #: Duplicates of messages still in flight (published, not yet seen stored).
    in_flight: list[TurnEvent] = field(default_factory=list)


Known = dict[tuple[Scope, str], dict[str, int]]


def known_messages(memory: MemoryReader, keys: Iterable[tuple[Scope, str]]) -> Known:
    """Message id -> content digest of every message the stores hold, per (scope, session)."""
    out: Known = {}
    for scope, sid in keys:
        try:
            turns = memory.raw(scope, sid)
        except SessionNotFound:  # a new session
            turns = []
        out[(scope, sid)] = {m.source_id: message_digest(m.role, m.content, m.speaker)
                             for t in turns for m in t.messages if m.source_id}
    return out


def sort_events(records: Sequence[TurnEvent], fields: Sequence[str], known: Known,
                flying: Known | None = None) -> Sorted:
    """Split ``records`` into new messages and duplicates (same id, same content).

    ``known`` holds what is stored, ``flying`` what is in flight; a message id repeated
    inside the request counts like one stored before. An id seen with other content
    raises :class:`ChangedMessage`, naming the first such event (``fields[i]``):
    nothing of the request is written then.
    """
    seen: Known = {}
    new: list[TurnEvent] = []
    new_fields: list[str] = []
    in_flight: list[TurnEvent] = []
    duplicates = 0
    changed: list[tuple[int, str]] = []
    for i, r in enumerate(records):
        key = (Scope(tenant_id=r.tenant_id, user_id=r.user_id), r.session_id)
        digest = event_digest(r)
        before = known.get(key, {}).get(r.message_id)
        where = "already stored"
        flies = False
        if before is None and flying is not None:
            before = flying.get(key, {}).get(r.message_id)
            where, flies = "already sent (not yet stored)", before is not None
        if before is None:
            before = seen.get(key, {}).get(r.message_id)
            where = "earlier in this request"
        if before is None:
            seen.setdefault(key, {})[r.message_id] = digest
            new.append(r)
            new_fields.append(fields[i])
        elif before == digest:
            duplicates += 1
            if flies:
                in_flight.append(r)
        else:
            changed.append((i, where))
    if changed:
        i, where = changed[0]
        r = records[i]
        raise ChangedMessage(
            f"{fields[i]}.content: message_id {r.message_id!r} of session {r.session_id!r} is "
            f"{where} with other content ({len(changed)} such event(s) in this request); a "
            f"message id names one message for good, so send a changed message under a new "
            f"id. Nothing of this request was written.")
    return Sorted(new, duplicates, new_fields, in_flight)


def append_direct(memory: ServedMemory, records: Sequence[TurnEvent],
                  fields: Sequence[str] | None = None) -> int:
    """Append the request's new messages in one write (``append_batch``); flush; duplicates.

    A replay (same id, same content) is counted, never written twice; an id with
    other content refuses the whole request (:class:`ChangedMessage`).
    """
    fields = fields if fields is not None else [f"events[{i}]" for i in range(len(records))]
    groups = group_by_session(records)
    sorted_ = sort_events(records, fields, known_messages(memory, groups))
    items = []
    for group in group_by_session(sorted_.new).values():
        # The group's first date and labels, later events filling what is missing; what
        # the session already holds is kept by the memory (on every write path).
        meta = group[0].meta()
        for r in group[1:]:
            meta = meta.filled_from(r.meta())
        messages = [r.message() for r in group]  # with its redaction marker
        items.append((meta, messages))
    if items:
        reports = memory.append_batch(items)  # one write: no delete falls between its sessions
        memory.flush()
        return sorted_.duplicates + sum(r.duplicates for r in reports)
    return sorted_.duplicates


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
