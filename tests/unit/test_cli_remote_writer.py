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
        self.batch_tenants: list[str | None] = []

    #: Tenants the test double's key may act for.
    tenants = ("acme",)

    def key_tenant(self) -> str:
        return "acme"

    def describe_key(self) -> Any:
        from memstrata.client.plan import KeyInfo

        return KeyInfo("k1", "acme", self.tenants, ("read", "write", "delete"), None)

    def ingest(self, events: list[Any], tenant_id: str | None = None) -> Any:
        self.batches.append(events)
        self.batch_tenants.append(tenant_id)
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
    writer = RemoteWriter(client, batch_events=3, parallel=1)  # one at a time: in order
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


def test_a_session_of_another_tenant_than_the_keys_is_named_and_not_sent():
    """Issue 36: one foreign session aborted the whole file; now it is named and skipped."""
    client = FakeClient()
    globex = Scope(tenant_id="globex", user_id="maya")
    report = RemoteWriter(client).ingest([_session(globex, "s1", 1), _session(ACME, "a1", 1)])
    assert [len(b) for b in client.batches] == [2] and report.committed == 1
    assert len(report.refused) == 1
    assert "globex" in report.refused[0] and "'s1'" in report.refused[0]
    # Nothing writable at all (`--tenant globex` with an acme key): refused, as before.
    with pytest.raises(RemoteError) as every:
        RemoteWriter(client).ingest([_session(globex, "s1", 1), _session(globex, "s2", 1)])
    assert every.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert "none of the 2 sessions" in str(every.value) and "globex" in str(every.value)
    with pytest.raises(RemoteError) as info:  # a single-session append still raises
        RemoteWriter(client).append(_session(Scope(tenant_id="globex", user_id="maya"),
                                             "s1", 1).meta, [])
    assert info.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_a_platform_key_writes_each_tenant_it_may_and_names_the_others():
    """A mixed-tenant file: acme and globex sessions are sent as their own tenant's; the
    initech sessions (more than one parallel window of them first) are named, not sent."""
    client = FakeClient()
    client.tenants = ("acme", "globex")
    initech = Scope(tenant_id="initech", user_id="maya")
    globex = Scope(tenant_id="globex", user_id="maya")
    sessions = ([_session(initech, f"i{n}", 1) for n in range(5)]
                + [_session(ACME, "a1", 1), _session(globex, "g1", 2)])
    report = RemoteWriter(client, parallel=2).ingest(sessions)
    assert sorted(client.closed) == ["a1", "g1"]
    assert sorted(t for t in client.batch_tenants if t) == ["acme", "globex"]
    assert report.committed == 2 and report.users == {ACME, globex}
    assert len(report.refused) == 5
    assert all("initech" in line for line in report.refused)
    assert [line.split("session ")[1].split()[0] for line in report.refused] == [
        f"'i{n}'" for n in range(5)]


def test_deleting_what_the_service_does_not_hold_is_an_empty_receipt_not_an_error():
    """Issue 31: a remote `forget` of an unknown user printed a 30-line traceback
    (the service's NOT_FOUND); locally it is one line, from an empty receipt."""
    from memstrata.client import RemoteSessionNotFound

    class NothingThere(FakeClient):
        """Test double: the service answers NOT_FOUND to every delete."""

        def delete(self, scope: Scope, session_id: str | None = None) -> Any:
            raise RemoteSessionNotFound(f"user_id: no memory for user {scope.user_id!r}")

    receipt = RemoteWriter(NothingThere()).delete(ACME)  # type: ignore[arg-type]
    assert receipt.complete and not any(receipt.removed.values()) and not receipt.errors
    assert (receipt.scope, receipt.session_id) == (ACME, None)


def test_sessions_are_sent_side_by_side_so_they_share_the_workers_batching_window():
    """Issue 31: `ingest --remote` sent one session at a time, each call waiting for the
    stream worker's window (1.2 turns/s). Here four sessions must be in flight at once:
    each call waits at a barrier for the other three (a sequential sender times out)."""
    import threading

    class Together(FakeClient):
        """Test double: an ingest returns only once four are in flight together."""

        def __init__(self) -> None:
            super().__init__()
            self.barrier = threading.Barrier(4, timeout=10)
            self.lock = threading.Lock()

        def ingest(self, events: list[Any], tenant_id: str | None = None) -> Any:
            self.barrier.wait()
            with self.lock:
                return super().ingest(events, tenant_id)

        def close_session(self, scope: Scope, session_id: str) -> int:
            with self.lock:
                return super().close_session(scope, session_id)

    client = Together()
    ticks: list[int] = []
    report = RemoteWriter(client, parallel=4).ingest(
        [_session(ACME, f"s{n}", 1) for n in range(8)], progress=ticks.append)
    assert sorted(client.closed) == [f"s{n}" for n in range(8)]
    assert (report.sessions, report.turns, report.committed) == (8, 8, 8)
    assert ticks == [1] * 8
