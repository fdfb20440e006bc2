"""The write path's entry points: appends, batches of appends, closes, ingest, flushes.

Each takes the write lock, redacts what comes in, and goes through the one
prepare/commit engine (:mod:`memstrata.memory.batch`), so every entry point
gives the same records.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

from memstrata.memory.batch import MemoryBatches, _Pending
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.roles import AppendReport, IngestReport


class MemoryWrites(MemoryBatches):
    """Appends, closes and ingests (the :class:`~memstrata.roles.MemoryWriter` role)."""

    def append(self, meta: SessionMeta, turns: Sequence[Turn], *,
               close: bool = False) -> AppendReport:
        """Add or replace turns of a session (by index) and index what they touch.

        A turn already stored with the same messages changes nothing; one whose
        messages changed (a reply arrived) is replaced, and every window that
        reads it is rebuilt. Flushing follows ``MEMSTRATA_FLUSH_POLICY``.
        """
        self._writable()
        turns = self.redactor.indexed_turns(meta.scope.tenant_id, turns)
        with self._write_lock:
            stored = self.docs.get_turns(meta.scope, meta.session_id)
            pending = self._prepare(meta, turns, stored, close=close)
            report = self._commit([pending])[0] if pending else self._empty(meta)
            self._maybe_flush()
        return report

    def append_messages(self, meta: SessionMeta, messages: Sequence[Message], *,
                        close: bool = False) -> AppendReport:
        """Add messages in arrival order, grouped into turns as ``group_turns`` does.

        A user message opens a turn; any other message joins the session's last
        turn (a session that opens with the assistant gets a turn of its own).
        A message whose ``source_id`` the session already holds is a replay and
        changes nothing.
        """
        self._writable()
        messages, dropped = self.redactor.messages(meta.scope.tenant_id, messages)
        with self._write_lock:
            if self._nothing_left(meta, messages, dropped):
                return self._empty(meta)
            stored = self.docs.get_turns(meta.scope, meta.session_id)
            turns, duplicates = _merge_messages(stored, messages)
            pending = self._prepare(meta, turns, stored, close=close)
            report = self._commit([pending])[0] if pending else self._empty(meta)
            report.duplicates = duplicates
            self._maybe_flush()
        return report

    def append_batch(self, items: Sequence[tuple[SessionMeta, Sequence[Message]]], *,
                     hold: Collection[tuple[Scope, str]] = ()) -> list[AppendReport]:
        """:meth:`append_messages` for several sessions in one write, one report each.

        Every session's changed windows are built first, then embedded in one
        encoder call and upserted once per store (what the stream worker does
        with a batch of events). Each session may appear once per call.

        Sessions in ``hold`` (scope, session id) keep an incomplete last window
        unbuilt: its turns are stored but not indexed (``AppendReport.held``),
        because the caller has more of the session waiting and would otherwise
        index the window provisionally only to rebuild it at the next message.
        The next write of the session (an append, even of no messages, or its
        close) builds it; the session's digest never matches until then.
        """
        self._writable()
        keys = [(meta.scope, meta.session_id) for meta, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError("append_batch: a session appears more than once in one call")
        held = set(hold)
        redacted = [(meta, *self.redactor.messages(meta.scope.tenant_id, messages))
                    for meta, messages in items]
        with self._write_lock:
            prepared: list[tuple[SessionMeta, _Pending | None, int]] = []
            for meta, messages, dropped in redacted:
                if self._nothing_left(meta, messages, dropped):
                    prepared.append((meta, None, 0))
                    continue
                stored = self.docs.get_turns(meta.scope, meta.session_id)
                turns, duplicates = _merge_messages(stored, messages)
                prepared.append((meta, self._prepare(
                    meta, turns, stored, close=False,
                    hold=(meta.scope, meta.session_id) in held), duplicates))
            committed = iter(self._commit([p for _, p, _ in prepared if p is not None]))
            reports = []
            for meta, pending, duplicates in prepared:
                report = next(committed) if pending is not None else self._empty(meta)
                report.duplicates = duplicates
                reports.append(report)
            self._maybe_flush()
        return reports

    def _nothing_left(self, meta: SessionMeta, messages: Sequence[Message],
                      dropped: int) -> bool:
        """Redaction dropped every message of a session the stores do not hold: writing
        it would list an empty session, so nothing is written."""
        return (bool(dropped) and not messages
                and self.docs.get_session(meta.scope, meta.session_id) is None)

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        """The session is finished: its last window is final (nothing provisional)."""
        self._writable()
        with self._write_lock:
            meta = self.session(scope, session_id)
            stored = self.docs.get_turns(scope, session_id)
            pending = self._prepare(meta, [], stored, close=True)
            report = self._commit([pending])[0] if pending else self._empty(meta)
            self._maybe_flush()
        return report

    def ingest(
        self,
        sessions: Iterable[Session],
        *,
        progress: Callable[[int], None] | None = None,
        batch_units: int = 256,
        report: IngestReport | None = None,
    ) -> IngestReport:
        """Write whole sessions through the append path, then flush.

        Idempotent: a session whose content and index fingerprint are unchanged
        since the last ingest is skipped. A session that lost turns is replaced
        as a whole; any other change rebuilds only the windows it touches. The
        session's digest is written after its units, so an interrupted ingest
        redoes the session next time instead of leaving it half-indexed.
        ``progress`` is called with the number of turns just handled. Pass a
        ``report`` to keep the counts of an ingest that is interrupted part way.
        """
        self._writable()
        report = report if report is not None else IngestReport()
        start = time.perf_counter()
        batch: list[_Pending] = []
        batched: set[tuple[Scope, str]] = set()
        size = 0
        with self._write_lock:
            for session in sessions:
                scope, sid = session.scope, session.session_id
                turns = self.redactor.turns(scope.tenant_id, session.turns)
                if not turns and session.turns:  # every message dropped: nothing to store
                    if progress:
                        progress(len(session.turns))
                    continue
                if turns != session.turns:
                    session = session.model_copy(update={"turns": turns})
                report.users.add(scope)
                if self.docs.session_digest(scope, sid) == self._digest(session.turns):
                    report.unchanged += 1
                    if progress:
                        progress(len(session.turns))
                    continue
                if (scope, sid) in batched:
                    self._commit(batch, report)  # its first copy is not written yet
                    batch, size, batched = [], 0, set()
                stored = self.docs.get_turns(scope, sid)
                keep = {t.index for t in session.turns}
                if any(t.index not in keep for t in stored):
                    self._delete(scope, sid)  # it shrank: the old turns must go
                    stored = []
                pending = self._prepare(session.meta, session.turns, stored, close=True)
                report.sessions += 1
                report.turns += len(session.turns)
                if pending is not None:
                    batch.append(pending)
                    batched.add((scope, sid))
                    size += len(pending.units)
                    report.units += len(pending.units)
                else:
                    report.committed += 1
                if size >= batch_units:
                    self._commit(batch, report)
                    batch, size, batched = [], 0, set()
                if progress:
                    progress(len(session.turns))
            self._commit(batch, report)
            self.flush()
        report.seconds = time.perf_counter() - start
        return report

    @staticmethod
    def _empty(meta: SessionMeta) -> AppendReport:
        return AppendReport(scope=meta.scope, session_id=meta.session_id)

    def flush(self) -> None:
        """Make all writes visible and build search indexes (can take a while at scale)."""
        if self.read_only:
            return
        with self._write_lock:
            for store in reversed(self._stores()):
                store.flush()
            self._last_flush = time.monotonic()

    @contextlib.contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Every write of this process waits while the block runs, the stores flushed first:
        their files stand still for a backup to copy (``memstrata.lifecycle.pause``)."""
        with self._write_lock:
            self.flush()
            yield

    def _maybe_flush(self) -> None:
        policy = self.settings.flush_policy
        if policy == "call" or (
            policy == "time"
            and time.monotonic() - self._last_flush >= self.settings.flush_interval_s
        ):
            self.flush()


def _merge_messages(stored: Sequence[Turn], messages: Sequence[Message]
                    ) -> tuple[list[Turn], int]:
    """New messages onto stored turns as ``group_turns`` groups them: (touched turns, replays).

    A user message opens a turn; any other message joins the last turn (a
    session that opens with the assistant gets a turn of its own). A message
    whose ``source_id`` the session already holds is a replay and is skipped.
    """
    by_index = {t.index: t for t in stored}
    known = {sid for t in stored for sid in t.source_ids}
    last = max(by_index, default=0)
    touched: set[int] = set()
    duplicates = 0
    for m in messages:
        if m.source_id is not None:
            if m.source_id in known:
                duplicates += 1
                continue
            known.add(m.source_id)
        if m.role == "user" or last == 0:
            last += 1
            by_index[last] = Turn(index=last, messages=[m])
        else:
            by_index[last] = Turn(index=last, messages=[*by_index[last].messages, m])
        touched.add(last)
    return [by_index[i] for i in sorted(touched)], duplicates
