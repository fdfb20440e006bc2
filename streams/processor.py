"""What the worker does with a batch of records, independent of Faust.

The Faust agents (:mod:`streams.agents`) hand raw records here; this module
decodes and validates them, writes through a
:class:`~memstrata.roles.MemoryWriter`, flushes once per batch, and says what
to publish (L0 notices, dead letters). Keeping it free of Faust lets unit tests
drive it directly. What it uses but is not its loop lives beside it:
:mod:`streams.records` (the consumed record), :mod:`streams.outbox` (what to
publish), :mod:`streams.outage` (retries and the outage that stops the worker),
:mod:`streams.progress` (what control events wait for) and
:mod:`streams.session_state` (what it keeps per session).

Writes run on one dedicated thread (``writer_thread``): the stores are written
by one caller at a time, and the event loop (heartbeats, fetching) never waits
on an embedding call.

A full batch whose newest event is older than ``freshness_s`` means the
worker is behind its topic, and with many sessions open at once a batch
holds about one message per session. Indexing each session's incomplete
last window then would be redone at its next message, which is already in
the topic. So while behind, the
writer holds those windows (turns stored, not indexed) until the session's
next message, its close, the worker catching up, or ``hold_max_s``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memstrata.config import defaults
from memstrata.limits import TurnLimits
from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import AppendReport, MemoryWriter
from memstrata.telemetry.context import bind
from memstrata.wire import ControlEvent
from streams.events import (
    DeadLetter,
    Invalid,
    L0Event,
    decode_control,
    decode_turn,
    utcnow,
)
from streams.metrics import StreamMetrics
from streams.outage import StoreUnavailable, is_transient, retried
from streams.outbox import Outbox, dead_letter
from streams.progress import TurnProgress, wait_for_turns
from streams.fences import DeleteFences
from streams.records import Record, Replay, belongs
from streams.session_state import Group, Held, bare_meta, but_last, same_session
from streams.sessions import OpenSessions, is_legacy_key, session_key
from memstrata.kafka import KafkaSettings
from streams.settings import StreamSettings, check_turns_fit

__all__ = ["SWEEP_CHUNK", "Processor", "Quiesced"]

log = logging.getLogger("memstrata.stream")
T = TypeVar("T")


#: Sessions closed (or table entries indexed) per step of a sweep; the loop runs
#: its other tasks (gRPC, heartbeats) between steps.
SWEEP_CHUNK = 128


class Quiesced(Exception):
    """The worker is stopping: this batch is left unstored and unacknowledged, for the
    partition's next owner (see :meth:`Processor.quiesce`)."""


class Processor:
    """Decode, validate, write, flush; one instance per worker."""

    def __init__(
        self,
        writer: MemoryWriter,
        limits: StreamSettings,
        *,
        turns: TurnLimits,
        metrics: StreamMetrics | None = None,
        sessions: MutableMapping[str, Any] | None = None,
        progress: TurnProgress | None = None,
        owned: Callable[[int], bool] | None = None,
        replay: Replay | None = None,
        dead_letter_max_bytes: int | None = None,
    ) -> None:
        self.writer = writer
        self.limits = limits
        #: The core's turn-event limits, the ones the query service's Ingest applies.
        check_turns_fit(limits, turns)
        self.turns = turns
        self.metrics = metrics or StreamMetrics.create()
        # Looked up once: _noted runs for every session of every batch.
        self._units_provisional = self.metrics.units_indexed.labels("provisional")
        self._units_final = self.metrics.units_indexed.labels("final")
        self._idle_closes = self.metrics.control_applied.labels("idle_close")
        #: Per open session: tenant, user, session, last event time, provisional turns.
        #: Under Faust this is a table backed by its changelog topic (a cache of the stores).
        self.sessions: MutableMapping[str, Any] = {} if sessions is None else sessions
        self.progress = progress or TurnProgress()
        self.owned = owned or (lambda p: True)
        self.replay = replay
        #: The deletes applied, so that their turns handed again are not stored again.
        self.fences = DeleteFences()
        #: DLQ records are cut to this size (the producer refuses larger requests).
        self.dead_letter_max_bytes = (defaults(KafkaSettings).dead_letter_max_bytes()
                                      if dead_letter_max_bytes is None else dead_letter_max_bytes)
        #: Held while a batch is stored and its offsets noted, and while a delete
        #: and its replay run: a delete sees exactly which turns are stored.
        self._order = asyncio.Lock()
        #: Sessions whose last window is held (see the module doc), by (scope, session).
        self.held: dict[tuple[Scope, str], Held] = {}
        #: When the last batch of turns was stored (``time.monotonic``).
        self._last_batch = time.monotonic()
        #: Sessions noted since their last close, by last event time (wall clock): the
        #: idle sweep visits these, never every session the table ever held.
        self.open_sessions = OpenSessions()
        #: The index must be rebuilt from the table (at start, after a rebalance).
        self._reindex = True
        #: Set by :meth:`quiesce`: no batch, control or sweep starts any more.
        self.quiescing = False
        #: Sessions whose window the table says is held (before a restart or a rebalance),
        #: found when the index is rebuilt; built by the next :meth:`build_held`.
        self._table_held: set[tuple[Scope, str]] = set()
        #: Held by the idle sweep: a second run while one is under way does nothing.
        self._sweep = asyncio.Lock()
        self.writer_thread = ThreadPoolExecutor(1, thread_name_prefix="memstrata-writer")

    def close(self) -> None:
        """Build the windows still held (a stopped worker leaves its turns indexed), then
        stop the writer thread. Their notices are not sent: the stores are the truth."""
        if self.held and self.quiescing:
            # Not built now: the partitions may already be another worker's, and two
            # writers of one session lose updates. The table notes them for the next owner.
            log.warning("stopping with %d held windows unbuilt; the partitions' next owner "
                        "builds them", len(self.held))
        elif self.held:
            items: list[tuple[SessionMeta, list[Message]]] = [
                (h.meta, []) for h in self.held.values()]
            try:
                self.writer_thread.submit(self._append_all, items, set()).result()
                log.info("built %d held windows before stopping", len(items))
            except Exception as exc:  # noqa: BLE001 - stopping anyway; next write builds them
                log.warning("could not build %d held windows before stopping (%s: %s); the "
                            "sessions' next writes or closes build them", len(items),
                            type(exc).__name__, exc)
            self.held.clear()
        self.writer_thread.shutdown(wait=True)

    async def _write(self, fn: Callable[[], T], *, retry_any: bool = False) -> T:
        """Run a store call on the writer thread, retried with backoff (bounded); an
        outage raises :class:`~streams.outage.StoreUnavailable` (see
        :func:`~streams.outage.retried`)."""
        loop = asyncio.get_running_loop()
        # bind: with tracing on, the store writes nest under the batch's span.
        return await retried(lambda: loop.run_in_executor(self.writer_thread, bind(fn)),
                             self.limits, retry_any=retry_any)

    async def quiesce(self) -> list[L0Event]:
        """Stop taking work and finish what is in hand, while the partitions are still ours.

        A worker that stops leaves its consumer group; from then on another worker may
        own its partitions, and a batch or a held window this one is still writing races
        the new owner's writes of the same sessions (the later write of a stale view
        wins). So before leaving: no batch, control event or sweep starts after this
        (:class:`Quiesced`: the records stay unacknowledged, for the next owner), the
        one in hand finishes, and the held windows are built. Returns their notices.
        The caller bounds the wait.
        """
        self.quiescing = True
        async with self._sweep, self._order:
            if not self.held:
                return []
            return await self._build_held(list(self.held))

    def _open(self) -> None:
        if self.quiescing:
            raise Quiesced("the worker is stopping")

    # -- turns ------------------------------------------------------------
    async def handle_turns(self, records: Sequence[Record], waiting: int | None = None
                           ) -> Outbox:
        """Store a batch of turn records; returns what to publish.

        ``waiting``: records of the batch's partitions still in the topic after
        it (None: not known). A full batch of them waiting is a backlog even when
        this batch's events are fresh or it was cut short (a worker that has just
        started, a producer that sent a burst bigger than a batch).

        Raises :class:`StoreUnavailable` (with what may still be published and
        committed) only when the stores stay unreachable; every other failure
        becomes a dead letter.
        """
        async with self._order:
            self._open()
            return await self._store_turns(records, waiting=waiting)

    async def _store_turns(self, records: Sequence[Record], replay: bool = False,
                           waiting: int | None = None) -> Outbox:
        out = Outbox()
        groups: OrderedDict[tuple[Scope, str], Group] = OrderedDict()
        handled = [False] * len(records)
        if not replay:
            # One increment per topic, not per record: a labels() lookup takes a lock.
            for topic, n in Counter(rec.topic for rec in records).items():
                self.metrics.events_in.labels(topic).inc(n)
        for i, rec in enumerate(records):
            try:
                ev = decode_turn(rec.value, self.limits, rec.key, turns=self.turns)
                meta, message = ev.meta(), ev.message()
                stamp = rec.received if rec.received is not None else ev.ts.timestamp()
            except Invalid as bad:
                out.dead.append(self._dead(bad, rec))
                handled[i] = True
                continue
            except Exception as exc:  # noqa: BLE001 - a check the decoder missed: still DLQ
                out.dead.append(self._dead(Invalid("bad_field", f"{type(exc).__name__}: "
                                                   f"{str(exc)[:200]}"), rec))
                handled[i] = True
                continue
            if self.fences.covers(ev.scope, ev.session_id, rec.partition, rec.offset):
                # Before a delete already applied (delivered again): it stays deleted.
                self.metrics.records_fenced.inc()
                handled[i] = True
                continue
            group = groups.setdefault((ev.scope, ev.session_id),
                                      Group(meta, partition=rec.partition))
            # A date or labels only the batch's later events carry are not lost; what the
            # session already holds is kept by the writer (Memory: first ones stick).
            group.meta = group.meta.filled_from(meta)
            group.messages.append(message)
            group.indices.append(i)
            if not replay:
                group.stamps.append(stamp)
        # Behind the topic (a full batch whose newest event is older than freshness_s,
        # or a full batch already waiting behind this one: a burst of fresh events
        # that fits in one batch is not a backlog): hold the open windows of this
        # batch's sessions (unless held too long already); otherwise build every
        # window held so far.
        clock = time.monotonic()
        newest = max((ts for g in groups.values() for ts in g.stamps), default=time.time())
        stale = (len(records) >= self.limits.batch_max
                 and time.time() - newest >= self.limits.freshness_s)
        backlog = waiting is not None and waiting >= self.limits.batch_max
        behind = not replay and self.limits.hold_max_s > 0 and (stale or backlog)
        hold = {k for k in groups if not self._overdue(k, clock)} if behind else set()
        self._forget_moved()
        for key, held in self.held.items():
            if key not in groups and (not behind or self._overdue(key, clock)):
                groups[key] = Group(held.meta, partition=held.partition)
        if groups:
            started = time.perf_counter()
            try:
                reports = await self._store_groups(list(groups.values()), records, out,
                                                   handled, hold)
            except StoreUnavailable as down:
                raise down.after(records, handled, out) from down.__cause__
            took = time.perf_counter() - started
            self.metrics.l0_build_seconds.observe(took)
            log.info("batch: %d records, %d sessions (%d held), stored in %.2fs",
                     len(records), len(groups), len(hold), took)
            out.l0 += self._settle(reports, groups)
        self._last_batch = time.monotonic()
        for rec in records:
            await self.progress.advance(rec.partition, rec.offset + 1)
        return out

    def _forget_moved(self) -> None:
        """Drop held sessions of partitions this worker no longer owns (a rebalance):
        the new owner builds them, from the session table's note."""
        owned = {p: self.owned(p) for p in {h.partition for h in self.held.values()}
                 if p is not None}
        for key in [k for k, h in self.held.items()
                    if h.partition is not None and not owned[h.partition]]:
            del self.held[key]

    def _overdue(self, key: tuple[Scope, str], clock: float) -> bool:
        held = self.held.get(key)
        return held is not None and clock - held.since >= self.limits.hold_max_s

    def _settle(self, reports: Sequence[AppendReport],
                groups: MutableMapping[tuple[Scope, str], Group]) -> list[L0Event]:
        """Note the reports; freshness is observed once nothing of a session is held."""
        now, clock = time.time(), time.monotonic()
        notes: list[L0Event] = []
        for rep in reports:
            key = (rep.scope, rep.session_id)
            group = groups.get(key)
            stamps = group.stamps if group is not None else []
            if rep.held:
                held = self.held.get(key)
                if held is None:
                    held = self.held[key] = Held(group.meta if group else bare_meta(key), clock,
                                                  partition=group.partition if group else None)
                elif group is not None:
                    held.meta = held.meta.filled_from(group.meta)
                    if group.messages:  # still sending: hold_max_s counts from now
                        held.since = clock
                held.stamps += stamps
            else:
                done = self.held.pop(key, None)
                self._searchable([*stamps, *(done.stamps if done else ())], now)
            notes += self._noted(rep, "append", now,
                                 group.partition if group is not None else None)
        self.metrics.held_sessions.set(len(self.held))
        return notes

    async def _store_groups(self, groups: list[Group], records: Sequence[Record], out: Outbox,
                            handled: list[bool], hold: set[tuple[Scope, str]]
                            ) -> list[AppendReport]:
        """Store every session; one that keeps failing is dead-lettered, the rest stored."""
        try:
            reports = await self._write(lambda: self._append_all(
                [(g.meta, g.messages) for g in groups], hold))
        except StoreUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - isolate the session that fails
            log.warning("batch refused (%s: %s); storing session by session",
                        type(exc).__name__, exc)
        else:
            for g in groups:
                for i in g.indices:
                    handled[i] = True
            return reports
        reports = []
        for g in groups:
            one = [(g.meta, g.messages)]
            try:
                reports += await self._write(functools.partial(self._append_all, one, hold),
                                             retry_any=True)
            except StoreUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 - this session stays refused: DLQ it
                why = Invalid("store_failed", f"{type(exc).__name__}: {exc} (after "
                              f"{self.limits.store_refused_attempts} attempts)")
                out.dead += [self._dead(why, records[i]) for i in g.indices]
            for i in g.indices:
                handled[i] = True
        return reports

    def _append_all(self, groups: list[tuple[SessionMeta, list[Message]]],
                    hold: set[tuple[Scope, str]]) -> list[AppendReport]:
        # One write for the whole batch (Memory.append_batch: one embedding call and
        # one upsert per store).
        reports = self.writer.append_batch(groups, hold=hold & {(m.scope, m.session_id)
                                                               for m, _ in groups})
        self.writer.flush()
        return reports

    def _noted(self, rep: AppendReport, cause: str, now: float,
               partition: int | None = None) -> list[L0Event]:
        """Update the session cache and metrics from one report; the L0 notice to send.

        A close leaves the table and the idle index (a later turn opens the
        session again), unless the session saw an event while it was closing.
        """
        key = session_key(rep.scope, rep.session_id)
        old = self.sessions.get(key)
        state = dict(old or {
            "tenant_id": rep.scope.tenant_id, "user_id": rep.scope.user_id,
            "session_id": rep.session_id, "provisional": []})
        before = set(state.get("provisional", []))
        final = set(rep.units_written) - set(rep.provisional)
        replaced = len(before & final)
        self.metrics.turns_indexed.inc(len(rep.turns_written))
        self._units_provisional.inc(len(rep.provisional))
        self._units_final.inc(len(final))
        self.metrics.provisional_replaced.inc(replaced)
        if cause == "close":
            self._closed(key)
        else:
            self._keep(key, old, state, rep, before - final, now, partition)
        if not rep.unit_ids:
            return []
        return [L0Event(tenant_id=rep.scope.tenant_id, user_id=rep.scope.user_id,
                        session_id=rep.session_id, unit_ids=list(rep.unit_ids),
                        turns=list(rep.units_written), provisional=list(rep.provisional),
                        cause=cause, ts=utcnow())]  # type: ignore[arg-type]

    def _keep(self, key: str, old: Any, state: dict[str, Any], rep: AppendReport,
              still: set[int], now: float, partition: int | None) -> None:
        """Write an open session's state (only if more than its time moved)."""
        state["provisional"] = sorted(still | set(rep.provisional))
        # The first held turn only: enough to know the session holds a window (what a
        # restarted worker builds from), and it stays the same while that window grows,
        # so a held session is not rewritten to the table at every message.
        state["held"] = sorted(rep.held)[:1]
        state["last"] = now
        if partition is not None:
            state["partition"] = partition
        self.open_sessions.touch(key, now)
        # Only the time moved, and the table's is recent: not rewritten (with many open
        # sessions that is a changelog record per message). The idle index has the
        # exact time; after a rebalance the table's time is at most idle_s / 10 old.
        if not (isinstance(old, dict) and but_last(old) == but_last(state)
                and now - old.get("last", 0) < self.limits.idle_s / 10):
            self.sessions[key] = state

    def _closed(self, key: str) -> None:
        """A closed session leaves the table (one changelog record) and the idle index.

        The caller took it out of the index before the close; back in it means
        a turn arrived meanwhile: the session stays open, as that turn wrote it.
        """
        if key in self.open_sessions:
            return
        if key in self.sessions:
            self.sessions.pop(key, None)

    # -- control ----------------------------------------------------------
    async def handle_control(self, rec: Record) -> Outbox:
        """Apply one control event once the turns it follows are stored."""
        return await self.handle_controls([rec])

    async def handle_controls(self, records: Sequence[Record]) -> Outbox:
        """Apply control events in order, then flush once (closes come in bursts)."""
        self._open()
        out = Outbox()
        applied = 0
        # Windows held for sessions that these events close are built together first
        # (one encoder call); each close then finds its last window already built.
        closing = []
        for rec in records:
            try:
                ev = decode_control(rec.value, self.limits, rec.key)
            except Invalid:
                continue
            if ev.type == "close_session" and (ev.scope, ev.session_id) in self.held:
                closing.append((ev.scope, str(ev.session_id)))
        if closing:
            try:
                async with self._order:
                    out.l0 += await self._build_held(
                        [k for k in dict.fromkeys(closing) if k in self.held])
            except StoreUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 - each close builds its own window then
                log.warning("building held windows before closes failed (%s: %s)",
                            type(exc).__name__, exc)
        for rec in records:
            applied += await self._control(rec, out)
        if applied:
            await self._write(self.writer.flush)
        return out

    async def _control(self, rec: Record, out: Outbox) -> bool:
        self.metrics.events_in.labels(rec.topic).inc()
        try:
            ev = decode_control(rec.value, self.limits, rec.key)
        except Invalid as bad:
            out.dead.append(self._dead(bad, rec))
            return False
        log.debug("%s %s/%s after %s (stored: %s)", ev.type, ev.scope, ev.session_id, ev.after,
                 self.progress.done)
        if ev.after:
            await wait_for_turns(self.progress, ev, rec, owned=self.owned, lim=self.limits,
                                 metrics=self.metrics)
        self._open()  # the wait may outlast the worker's stop
        try:
            out.l0 += await self.apply(ev)
        except StoreUnavailable:
            raise
        except Exception as exc:
            if is_transient(exc):  # the broker, reading turns again after a delete
                raise
            out.dead.append(self._dead(Invalid("rejected", f"{type(exc).__name__}: {exc}"), rec))
            return False
        self.metrics.control_applied.labels(ev.type).inc()
        return True

    async def apply(self, ev: ControlEvent) -> list[L0Event]:
        scope = ev.scope
        if ev.type == "close_session":
            assert ev.session_id is not None
            sid = ev.session_id
            key = session_key(scope, sid)
            was = self.open_sessions.discard(key)
            try:
                rep = await self._write(lambda: self._close(scope, sid))
            except BaseException:
                if was is not None and key not in self.open_sessions:
                    self.open_sessions.touch(key, was)  # not closed: still open
                raise
            self._unhold((scope, sid), built=rep is not None)
            if rep is None:  # no such session in the stores: nothing to keep either
                self._closed(key)
                return []
            return self._noted(rep, "close", time.time())
        sid_or_none = ev.session_id if ev.type == "delete_session" else None
        async with self._order:
            await self._write(lambda: self._delete(scope, sid_or_none))
            self.fences.note(scope, sid_or_none, ev.after or {})
            self._forget(scope, sid_or_none)
            for held in [k for k in self.held if k[0] == scope
                         and sid_or_none in (None, k[1])]:
                self._unhold(held, built=False)
            return await self._replay_after(ev, scope, sid_or_none)

    async def _replay_after(self, ev: ControlEvent, scope: Scope,
                            session_id: str | None) -> list[L0Event]:
        """Re-store turns the delete must not touch: stored already, but produced after it.

        Turns and controls are two topics, so the worker may have stored turns
        that follow the delete (offset >= ``after``) before it read the delete.
        Ordering is by offset: those turns are new data, so they are read again
        from the broker and written back.
        """
        if self.replay is None or not ev.after:
            return []
        ranges = {p: (o, self.progress.done[p]) for p, o in ev.after.items()
                  if self.owned(p) and self.progress.done.get(p, 0) > o}
        if not ranges:
            return []
        records = [r for r in await self.replay(ranges) if belongs(r, scope, session_id)]
        if not records:
            return []
        log.info("%s %s: re-storing %d turns produced after it", ev.type, scope, len(records))
        return (await self._store_turns(records, replay=True)).l0

    def _forget(self, scope: Scope, session_id: str | None) -> None:
        """Drop a deleted session's (or user's) table entries, old-form keys included."""
        if session_id is not None:
            legacy = f"{scope.tenant_id}/{scope.user_id}/{session_id}"
            keys = [k for k in (session_key(scope, session_id), legacy)
                    if same_session(self.sessions.get(k), scope, session_id)]
        else:  # every session of the user: the table is not indexed by user
            keys = [k for k, v in list(self.sessions.items()) if same_session(v, scope, None)]
        for key in keys:
            self.sessions.pop(key, None)
            self.open_sessions.discard(key)

    def _close(self, scope: Scope, session_id: str) -> AppendReport | None:
        try:
            rep = self.writer.close_session(scope, session_id)
        except LookupError:  # SessionNotFound: never had turns, or deleted since
            log.info("close_session for unknown session %s/%s ignored", scope, session_id)
            return None
        return rep

    def _delete(self, scope: Scope, session_id: str | None) -> None:
        receipt = self.writer.delete(scope, session_id)
        if not receipt.complete:
            raise OSError(f"delete of {scope} {session_id or '(all)'} incomplete: "
                          f"{receipt.errors}")

    def _unhold(self, key: tuple[Scope, str], *, built: bool) -> None:
        """The session's held window is built (closed) or gone (deleted)."""
        held = self.held.pop(key, None)
        if held is not None and built:
            self._searchable(held.stamps, time.time())
        self.metrics.held_sessions.set(len(self.held))

    def _searchable(self, stamps: Sequence[float], now: float) -> None:
        """Events with these times became searchable ``now``: their freshness."""
        for ts in stamps:
            self.metrics.freshness_seconds.observe(max(0.0, now - ts))

    # -- idle sessions ------------------------------------------------------
    async def build_held(self, clock: float | None = None) -> list[L0Event]:
        """Build the held windows once the worker has caught up or they are due.

        Caught up: no batch for half of ``freshness_s`` (a worker still behind
        gets batch after batch). Due: held for ``hold_max_s``. A window held
        before a restart or a rebalance is known only from the session table
        (found when the index is rebuilt): built now.
        """
        await self.refresh_index()
        async with self._order:  # after the batch in hand: it may build them itself
            now = time.monotonic() if clock is None else clock
            quiet = now - self._last_batch >= self.limits.freshness_s / 2
            self._forget_moved()
            keys = [k for k in self.held if quiet or self._overdue(k, now)]
            self._table_held -= set(self.held)
            from_table = list(self._table_held)
            out = await self._build_held(keys + from_table)
            self._table_held.difference_update(from_table)
            return out

    async def _build_held(self, keys: Sequence[tuple[Scope, str]]) -> list[L0Event]:
        """Build the held windows of these sessions in one write (one encoder call);
        the caller holds ``_order``."""
        if not keys:
            return []
        groups: OrderedDict[tuple[Scope, str], Group] = OrderedDict(
            (k, Group(self.held[k].meta if k in self.held else bare_meta(k))) for k in keys)
        reports = await self._write(lambda: self._append_all(
            [(g.meta, g.messages) for g in groups.values()], set()))
        log.info("built %d held windows", len(reports))
        return self._settle(reports, groups)

    def sessions_moved(self) -> None:
        """Partitions were assigned or revoked: rebuild the idle index from the table."""
        self._reindex = True

    async def refresh_index(self) -> None:
        """Rebuild the open-session index from the table if it may be stale (at start,
        after a rebalance), in steps that let the event loop run between them.

        Old-form keys (``tenant/user/session``) found are moved to the new key.
        """
        if not self._reindex:
            return
        self._reindex = False
        keys = list(self.sessions.keys())
        for i in range(0, len(keys), SWEEP_CHUNK):
            for key in keys[i:i + SWEEP_CHUNK]:
                self._index_entry(key)
            await asyncio.sleep(0)
        log.info("session index rebuilt: %d open sessions of %d in the table",
                 len(self.open_sessions), len(keys))

    def _index_entry(self, key: str) -> None:
        state = self.sessions.get(key)
        if not (isinstance(state, dict) and "tenant_id" in state and "user_id" in state
                and "session_id" in state):
            return
        part = state.get("partition")
        if part is not None and not self.owned(part):
            return  # its partition's owner closes it
        legacy = is_legacy_key(key)
        if legacy or state.get("held"):
            scope = Scope(tenant_id=state["tenant_id"], user_id=state["user_id"])
            sid = str(state["session_id"])
            if legacy:  # written before keys were escaped: moved once
                new = session_key(scope, sid)
                if new not in self.sessions:
                    self.sessions[new] = state
                self.sessions.pop(key, None)
                key = new
            if state.get("held") and self.owned(state.get("partition", -1)):
                self._table_held.add((scope, sid))
        self.open_sessions.touch(key, float(state.get("last", 0.0)))

    async def close_idle(self, now: float | None = None, *,
                         stopping: Callable[[], bool] | None = None) -> list[L0Event]:
        """Build held windows that are due, then finalise the open windows of
        sessions without events for ``idle_s``, each once.

        Only the open sessions that are due are visited (:class:`OpenSessions`),
        closed ``SWEEP_CHUNK`` at a time with one writer call each, yielding to
        the event loop between chunks. A run while another is under way returns
        at once, and one while a batch is being stored does not wait for it to
        build held windows; ``stopping`` ends the sweep early (the rest stay
        open: closed by the next run or the next worker).
        """
        if self._sweep.locked():
            return []
        async with self._sweep:
            await self.refresh_index()
            # A batch in hand builds what is overdue itself; the next run builds the rest
            # (the timer never waits for a batch).
            out = [] if self._order.locked() else await self.build_held()
            now = time.time() if now is None else now
            cutoff = now - self.limits.idle_s
            closed = False
            more = True
            while more and not (self.quiescing or stopping is not None and stopping()):
                due, more = self.open_sessions.due(cutoff, SWEEP_CHUNK)
                picked: list[tuple[str, float, Scope, str]] = []
                for key, last in due:
                    state = self.sessions.get(key)
                    if not isinstance(state, dict):
                        continue  # deleted
                    part = state.get("partition")
                    if part is not None and not self.owned(part):
                        continue  # moved: its new owner closes it
                    picked.append((key, last, Scope(tenant_id=state["tenant_id"],
                                                    user_id=state["user_id"]),
                                   str(state["session_id"])))
                if picked:
                    out += await self._close_picked(picked, now)
                    closed = True
                await asyncio.sleep(0)
            if closed:
                await self._write(self.writer.flush)
            return out

    async def _close_picked(self, picked: Sequence[tuple[str, float, Scope, str]],
                            now: float) -> list[L0Event]:
        """Close these idle sessions in one writer call; a session the writer refuses is
        logged and left out of the sweep (its next turn or a restart brings it back)."""
        sessions = [(scope, sid) for _, _, scope, sid in picked]
        try:
            results = await self._write(functools.partial(self._close_many, sessions))
        except BaseException:
            for key, last, _, _ in picked:  # not closed: open again
                if key not in self.open_sessions:
                    self.open_sessions.touch(key, last)
            raise
        out: list[L0Event] = []
        applied = 0
        for (key, _, scope, sid), got in zip(picked, results, strict=True):
            if isinstance(got, Exception):
                log.warning("idle close of %s/%s refused (%s: %s); left to its next turn",
                            scope, sid, type(got).__name__, got)
                continue
            applied += 1
            if (scope, sid) in self.held:
                self._unhold((scope, sid), built=got is not None)
            if got is None or not (got.units_written or got.turns_written or got.unit_ids):
                self._closed(key)  # nothing rewritten (the usual close): no notice either
            else:
                out += self._noted(got, "close", now)
        self._idle_closes.inc(applied)
        return out

    def _close_many(self, sessions: Sequence[tuple[Scope, str]]
                    ) -> list[AppendReport | None | Exception]:
        """Close each session; an outage raises (the chunk is retried: closes are
        idempotent), any other refusal is returned in its place."""
        out: list[AppendReport | None | Exception] = []
        for scope, sid in sessions:
            try:
                out.append(self._close(scope, sid))
            except Exception as exc:
                if is_transient(exc):
                    raise
                out.append(exc)
        return out

    # -- dead letters -------------------------------------------------------
    def _dead(self, bad: Invalid, rec: Record) -> DeadLetter:
        return dead_letter(bad, rec, max_bytes=self.dead_letter_max_bytes, metrics=self.metrics)
