"""``RemoteWriter``: what `ingest --remote` sends (a test double stands in for the client).

The end-to-end path (a real ``serve``) is in ``tests/e2e/test_cli_serve.py``; here the
batching, the message ids, the closes and the tenant check are pinned without a server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import grpc
import pytest

from memstrata.cli.remote_writer import RemoteWriter
from memstrata.client import RemoteError
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.roles import IngestReport, MemoryWriter

ACME = Scope(tenant_id="acme", user_id="maya")


class FakeClient:
    """Test double of MemoryClient: records calls; a message id seen before is a duplicate."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self.closed: list[str] = []
        self.seen: set[str] = set()

    def key_tenant(self) -> str:
        return "acme"

    def ingest(self, events: list[Any]) -> Any:
        self.batches.append(events)
        new = [e for e in events if e.message_id not in self.seen]
        self.seen.update(e.message_id for e in events)

        class Reply:
            accepted = len(new)
            duplicates = len(events) - len(new)
        return Reply()

    def close_session(self, scope: Scope, session_id: str) -> int:
        self.closed.append(session_id)
        return 0


def _session(scope: Scope, sid: str, n_turns: int) -> Session:
    turns = [Turn(index=i + 1, messages=[
        Message(role="user", content=f"question {i}", speaker="Maya",
                source_id="D1:1" if (sid, i) == ("s1", 0) else None),
        Message(role="assistant", content=f"answer {i}")]) for i in range(n_turns)]
    return Session(meta=SessionMeta(scope=scope, session_id=sid,
                                    session_date=datetime(2024, 6, 1), labels={"src": "t"}),
                   turns=turns)


def test_sessions_go_out_in_batches_with_stable_ids_and_a_close_each():
    client = FakeClient()
    writer = RemoteWriter(client, batch_events=3)
    assert isinstance(writer, MemoryWriter)
    ticks: list[int] = []
    report = writer.ingest([_session(ACME, "s1", 2), _session(ACME, "s2", 1)],
                           progress=ticks.append)
    assert [len(b) for b in client.batches] == [3, 1, 2]
    ids = [e.message_id for b in client.batches for e in b]
    assert ids == ["D1:1", "s1:1", "s1:2", "s1:3", "s2:0", "s2:1"]
    first = client.batches[0][0]
    assert (first.user_id, first.session_id, first.role, first.speaker) == (
        "maya", "s1", "user", "Maya")
    assert first.session_date.startswith("2024-06-01") and dict(first.labels) == {"src": "t"}
    assert client.closed == ["s1", "s2"]
    assert ticks == [2, 1]
    assert (report.sessions, report.turns, report.committed, report.unchanged) == (2, 3, 2, 0)
    assert report.users == {ACME}
    # Sent again: the service holds every message, so each session counts as unchanged.
    again = writer.ingest([_session(ACME, "s1", 2)], report=IngestReport())
    assert (again.sessions, again.unchanged, again.committed) == (0, 1, 1)


def test_a_session_of_another_tenant_than_the_keys_is_refused_before_sending():
    client = FakeClient()
    with pytest.raises(RemoteError) as info:
        RemoteWriter(client).ingest([_session(Scope(tenant_id="globex", user_id="maya"),
                                              "s1", 1)])
    assert info.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert "globex" in str(info.value) and not client.batches
