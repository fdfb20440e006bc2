"""A :class:`~memstrata.roles.MemoryWriter` over the query service, for ``--remote`` commands.

Sessions become turn events (one per message, ids as ``memstrata produce``
gives them: the message's source id, else ``<session>:<n>``), sent with
``IngestBatch`` and ended with ``CloseSession``; deletes are ``DeleteSession``
and ``DeleteUser``. The service groups messages into turns as the stream path
does, and skips messages it already holds, so sending a file again adds nothing.

Each session is sent as its own tenant's (the ``x-memstrata-tenant`` header), so a
platform key writes every tenant it may act for from one mixed file; the sessions
of any other tenant are not sent, each is named in the report, and the rest goes on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.roles import AppendReport, DeleteReceipt, IngestReport

if TYPE_CHECKING:
    from memstrata.client.sync import MemoryClient

#: Events per IngestBatch call (the service's default limit is 500).
BATCH_EVENTS = 200
#: Sessions in flight at once during ``ingest`` (the default per-tenant limit is 64 calls).
PARALLEL_SESSIONS = 16


class RemoteWriter:
    """Writes through a :class:`~memstrata.client.MemoryClient`, as the tenants its key may
    act for (its own; a platform key's others too)."""

    def __init__(self, client: MemoryClient, batch_events: int = BATCH_EVENTS,
                 parallel: int = PARALLEL_SESSIONS) -> None:
        self.client = client
        self.batch_events = batch_events
        self.parallel = max(1, parallel)
        self._tenants: frozenset[str] | None = None

    def _may_write(self, scope: Scope) -> bool:
        if self._tenants is None:  # asked once per writer
            self._tenants = frozenset(self.client.describe_key().tenants)
        return scope.tenant_id in self._tenants

    @staticmethod
    def _why_not(scope: Scope) -> str:
        return (f"tenant {scope.tenant_id!r}: this API key may not act for it; "
                f"leave --tenant out to write as the key's tenant")

    def _check_tenant(self, scope: Scope) -> None:
        """A session of a tenant the key may not act for is refused, as the service would."""
        import grpc

        from memstrata.client import RemoteError

        if not self._may_write(scope):
            raise RemoteError(grpc.StatusCode.PERMISSION_DENIED, self._why_not(scope))

    def _send(self, meta: SessionMeta, messages: Sequence[tuple[str, Message]]) -> tuple[int, int]:
        """Send ``(message id, message)`` pairs in batches: (accepted, duplicates)."""
        from memstrata.client import event

        self._check_tenant(meta.scope)
        events = [event(meta.scope.user_id, meta.session_id, mid, m.role, m.content,
                        session_date=meta.session_date, speaker=m.speaker,
                        labels=dict(meta.labels))
                  for mid, m in messages if m.content.strip()]
        accepted = duplicates = 0
        for i in range(0, len(events), self.batch_events):
            reply = self.client.ingest(events[i:i + self.batch_events],
                                       tenant_id=meta.scope.tenant_id)
            accepted += reply.accepted
            duplicates += reply.duplicates
        return accepted, duplicates

    def append(self, meta: SessionMeta, turns: Sequence[Turn]) -> AppendReport:
        """The turns' messages as events (the service regroups them into turns)."""
        return self.append_messages(meta, [m for t in turns for m in t.messages])

    def append_messages(self, meta: SessionMeta, messages: Sequence[Message]) -> AppendReport:
        """Messages without a source id get a random id: sending them again adds them again."""
        _, duplicates = self._send(meta, [(m.source_id or uuid.uuid4().hex, m)
                                          for m in messages])
        return AppendReport(scope=meta.scope, session_id=meta.session_id, duplicates=duplicates)

    def append_batch(self, items: Sequence[tuple[SessionMeta, Sequence[Message]]], *,
                     hold: Collection[tuple[Scope, str]] = ()) -> list[AppendReport]:
        """Each session's messages in turn (the service makes each IngestBatch one write).

        ``hold`` is ignored: the service decides what it indexes when.
        """
        return [self.append_messages(meta, messages) for meta, messages in items]

    def ingest(self, sessions: Iterable[Session], *,
               progress: Callable[[int], None] | None = None,
               report: IngestReport | None = None) -> IngestReport:
        """Each session's messages, then its close; ``report`` counts sessions as they end.

        The service answers a call once its stream worker has stored the events (one
        batching window), so sessions sent one after the other paid a window each (a
        36-session file: 37 s). Up to ``parallel`` sessions are now in flight at once,
        and the worker stores the ones that arrive together in one window.
        """
        report = report if report is not None else IngestReport()
        start = time.monotonic()
        todo = iter(sessions)
        running: set[Future[tuple[Session, int, int]]] = set()
        try:
            with ThreadPoolExecutor(self.parallel, thread_name_prefix="memstrata-send") as pool:
                try:
                    while True:
                        while len(running) < self.parallel:
                            session = next(todo, None)
                            if session is None:
                                break
                            if not self._may_write(session.meta.scope):
                                self._refuse(session, report)  # named; the rest goes on
                                continue
                            running.add(pool.submit(self._one, session))
                        if not running:
                            break
                        done, running = wait(running, return_when=FIRST_COMPLETED)
                        for future in done:
                            self._count(*future.result(), report, progress)
                finally:
                    for future in running:
                        future.cancel()
        finally:
            report.seconds += time.monotonic() - start
        if report.refused and not report.committed and not report.unchanged:
            self._refused_all(report)
        return report

    def _refused_all(self, report: IngestReport) -> None:
        """Nothing could be written (e.g. ``--tenant`` names a tenant the key may not act
        for): a refusal, as before, rather than a run that did nothing."""
        import grpc

        from memstrata.client import RemoteError

        raise RemoteError(grpc.StatusCode.PERMISSION_DENIED,
                          f"none of the {len(report.refused)} sessions may be written with "
                          f"this API key; the first: {report.refused[0]}")

    def _refuse(self, session: Session, report: IngestReport) -> None:
        """Name the session's records in the report; they are not sent."""
        meta = session.meta
        n = sum(len(t.messages) for t in session.turns)
        report.refused.append(f"user {meta.scope.user_id!r}, session {meta.session_id!r} "
                              f"({n} messages): {self._why_not(meta.scope)}")

    def _one(self, session: Session) -> tuple[Session, int, int]:
        """Send one session's messages and close it: (session, accepted, duplicates)."""
        meta = session.meta
        numbered = [(m.source_id or f"{meta.session_id}:{n}", m) for n, m in
                    enumerate(m for t in session.turns for m in t.messages)]
        accepted, duplicates = self._send(meta, numbered)
        self.client.close_session(meta.scope, meta.session_id)
        return session, accepted, duplicates

    @staticmethod
    def _count(session: Session, accepted: int, duplicates: int, report: IngestReport,
               progress: Callable[[int], None] | None) -> None:
        if accepted == 0 and duplicates:  # the service held every message already
            report.unchanged += 1
        else:
            report.sessions += 1
            report.turns += len(session.turns)
        report.committed += 1
        report.users.add(session.meta.scope)
        if progress is not None:
            progress(len(session.turns))

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        self.client.close_session(scope, session_id)
        return AppendReport(scope=scope, session_id=session_id)

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        """As the local memory does, nothing to delete is an empty receipt, not an error."""
        from memstrata.client import RemoteSessionNotFound

        try:
            return self.client.delete(scope, session_id)
        except RemoteSessionNotFound:  # NOT_FOUND: the user (or session) holds nothing
            return DeleteReceipt(scope=scope, session_id=session_id, complete=True)

    def flush(self) -> None:
        """Nothing to do: the service acknowledges a write once it is stored or published."""
