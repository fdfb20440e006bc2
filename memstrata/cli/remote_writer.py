"""A :class:`~memstrata.roles.MemoryWriter` over the query service, for ``--remote`` commands.

Sessions become turn events (one per message, ids as ``memstrata produce``
gives them: the message's source id, else ``<session>:<n>``), sent with
``IngestBatch`` and ended with ``CloseSession``; deletes are ``DeleteSession``
and ``DeleteUser``. The service groups messages into turns as the stream path
does, and skips messages it already holds, so sending a file again adds nothing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.roles import AppendReport, DeleteReceipt, IngestReport

if TYPE_CHECKING:
    from memstrata.client.sync import MemoryClient

#: Events per IngestBatch call (the service's default limit is 500).
BATCH_EVENTS = 200


class RemoteWriter:
    """Writes through a :class:`~memstrata.client.MemoryClient`; the tenant is the key's."""

    def __init__(self, client: MemoryClient, batch_events: int = BATCH_EVENTS) -> None:
        self.client = client
        self.batch_events = batch_events

    def _check_tenant(self, scope: Scope) -> None:
        """A session of another tenant than the key's is refused, as the service refuses reads."""
        import grpc

        from memstrata.client import RemoteError

        if scope.tenant_id != self.client.key_tenant():  # asked once per client
            raise RemoteError(grpc.StatusCode.PERMISSION_DENIED,
                              f"tenant {scope.tenant_id!r}: this API key does not belong to it; "
                              f"leave --tenant out to write as the key's tenant")

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
            reply = self.client.ingest(events[i:i + self.batch_events])
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
        """Each session's messages, then its close; ``report`` counts sessions as they end."""
        report = report if report is not None else IngestReport()
        start = time.monotonic()
        try:
            for session in sessions:
                meta = session.meta
                numbered = [(m.source_id or f"{meta.session_id}:{n}", m) for n, m in
                            enumerate(m for t in session.turns for m in t.messages)]
                accepted, duplicates = self._send(meta, numbered)
                self.client.close_session(meta.scope, meta.session_id)
                if accepted == 0 and duplicates:  # the service held every message already
                    report.unchanged += 1
                else:
                    report.sessions += 1
                    report.turns += len(session.turns)
                report.committed += 1
                report.users.add(meta.scope)
                if progress is not None:
                    progress(len(session.turns))
        finally:
            report.seconds += time.monotonic() - start
        return report

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        self.client.close_session(scope, session_id)
        return AppendReport(scope=scope, session_id=session_id)

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        return self.client.delete(scope, session_id)

    def flush(self) -> None:
        """Nothing to do: the service acknowledges a write once it is stored or published."""
