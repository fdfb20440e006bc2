"""The audit trail (issue 36 item 6): the log's hash chain, and an entry per audited call.

The file: 0600, one fsynced line per entry, each carrying its own hash and the
previous line's, so an edited, removed or reordered line is found by
``verify``; several processes appending at once keep one chain. Over a real
server: deletes, exports, admin calls (ReadAudit, another tenant's ListUsers)
and refusals of audited calls or admin keys are recorded with the key id,
tenant, user, session, record count and outcome, never message content; an
admin key reads its tenant's entries (paged) and no other key reads any.
"""

from __future__ import annotations

import json
import multiprocessing
import stat
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from memstrata.client import MemoryClient, RemoteError, RemoteSessionNotFound
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.model import Scope
from memstrata.rpc import memory_pb2 as pb
from query_service.audit import GENESIS, AuditLog, page, read_entries, verify
from tests.integration.query_service.scoped import Scoped, scoped_server, small_session

SECRET = "my locker code is 4417"  # content that must never reach the audit log


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory,
           embedder: MiniLMEmbedder) -> Iterator[Scoped]:
    with scoped_server(tmp_path_factory.mktemp("audit"), embedder) as s:
        yield s


def _log(tmp_path: Path, n: int = 5) -> Path:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for i in range(n):
        log.append(action="DeleteUser", key_id="k1", tenant="acme", user=f"u{i}", records=i)
    return path


# -- the file -------------------------------------------------------------------------------

def test_entries_chain_by_hash_in_a_private_file(tmp_path: Path):
    path = _log(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entries = list(read_entries(path))
    assert [e["seq"] for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0]["prev"] == GENESIS
    assert all(b["prev"] == a["hash"] for a, b in zip(entries, entries[1:]))
    verdict = verify(path)
    assert verdict.ok and verdict.entries == 5 and verdict.head == entries[-1]["hash"]


@pytest.mark.parametrize("tamper,found", [
    (lambda ls: ls.__setitem__(2, ls[2].replace('"records":2', '"records":0')),
     "line 3: its content does not match its hash"),
    (lambda ls: ls.__setitem__(4, ls[4].replace('"u4"', '"u9"')),  # the last line too
     "line 5: its content does not match its hash"),
    (lambda ls: ls.pop(1), "line 2: does not follow the line before it"),
    (lambda ls: ls.insert(1, ls.pop(3)), "line 2: does not follow the line before it"),
    (lambda ls: ls.__setitem__(0, "{not json"), "line 1: not an audit entry"),
])
def test_the_chain_detects_an_edited_removed_or_moved_line(tmp_path: Path, tamper, found):
    path = _log(tmp_path)
    lines = path.read_text().splitlines()
    tamper(lines)
    path.write_text("\n".join(lines) + "\n")
    verdict = verify(path)
    assert not verdict.ok
    assert any(p.startswith(found) for p in verdict.problems), verdict.problems


def test_an_edit_that_recomputes_the_lines_own_hash_still_breaks_the_next_link(tmp_path):
    import hashlib

    path = _log(tmp_path)
    lines = path.read_text().splitlines()
    entry = json.loads(lines[1])
    entry["records"] = 999
    del entry["hash"]
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    entry["hash"] = hashlib.sha256(canonical.encode()).hexdigest()
    lines[1] = json.dumps(entry, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")
    assert verify(path).problems == [
        "line 3: does not follow the line before it (a line was removed, inserted or "
        "edited before it)"]


def test_a_torn_last_line_is_reported_and_the_next_entry_still_chains(tmp_path: Path):
    path = _log(tmp_path, 2)
    with path.open("a") as fh:
        fh.write('{"seq":3,"ts":"2024')  # a crash mid-write
    AuditLog(path).append(action="DeleteSession", tenant="acme")
    verdict = verify(path)
    assert verdict.problems == [
        "line 3: not an audit entry (edited, or a write torn by a crash)"]
    entries = [json.loads(line) for line in path.read_text().splitlines() if '"hash"' in line]
    assert entries[-1]["prev"] == entries[-2]["hash"] and entries[-1]["seq"] == 3


def _append_many(path: str, n: int) -> None:
    log = AuditLog(Path(path))
    for i in range(n):
        log.append(action="keys.add", via="cli", tenant="acme", detail=f"key {i}")


def test_processes_appending_at_once_keep_one_chain(tmp_path: Path):
    path = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), 40)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    verdict = verify(path)
    assert verdict.ok and verdict.entries == 120


def test_pages_follow_seq_and_filter_by_tenant(tmp_path: Path):
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for i in range(7):
        log.append(action="DeleteUser", tenant="acme" if i % 2 == 0 else "globex")
    first, nxt = page(path, tenants={"acme"}, limit=3)
    assert [e["seq"] for e in first] == [1, 3, 5] and nxt == 5
    rest, nxt = page(path, tenants={"acme"}, after_seq=nxt, limit=3)
    assert [e["seq"] for e in rest] == [7] and nxt == 0


# -- over the service ------------------------------------------------------------------------

def _new(served: Scoped, after: int) -> list[dict]:
    return [e for e in read_entries(served.audit_path) if e["seq"] > after]


def _head(served: Scoped) -> int:
    entries = list(read_entries(served.audit_path))
    return entries[-1]["seq"] if entries else 0


def test_deletes_are_recorded_with_key_scope_counts_and_outcome(served: Scoped):
    key_id, key = served.key("a", ["read", "write", "delete"])
    served.memory.ingest([small_session("a", "gone", "g1", SECRET),
                          small_session("a", "gone", "g2", SECRET)])
    start = _head(served)
    with MemoryClient(served.address, api_key=key) as client:
        client.delete(Scope(tenant_id="a", user_id="gone"), "g1")
        client.delete(Scope(tenant_id="a", user_id="gone"))
        with pytest.raises(RemoteSessionNotFound):
            client.delete(Scope(tenant_id="a", user_id="gone"))  # nothing left: NOT_FOUND
    entries = _new(served, start)
    assert [(e["action"], e["session"], e["outcome"]) for e in entries] == [
        ("DeleteSession", "g1", "OK"), ("DeleteUser", "", "OK"), ("DeleteUser", "", "NOT_FOUND")]
    assert all((e["key_id"], e["tenant"], e["user"], e["via"]) == (key_id, "a", "gone", "rpc")
               for e in entries)
    assert entries[0]["records"] > 0 and entries[1]["records"] > 0
    assert entries[2]["records"] is None
    assert SECRET not in served.audit_path.read_text()
    assert verify(served.audit_path).ok


def test_refusals_of_audited_calls_and_of_admin_keys_are_recorded(served: Scoped):
    reader_id, reader = served.key("a", ["read"])
    admin_id, admin = served.key("a", ["read", "admin"], tenants=["b"])
    start = _head(served)
    code, why = served.refusal("DeleteUser", pb.UserRequest(user_id="u1"), reader)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    served.refusal("Ingest", pb.IngestRequest(event=pb.TurnEvent(user_id="u1")), admin)
    served.refusal("Search", pb.SearchRequest(user_id="u1"), admin, tenant="c")
    served.refusal("Search", pb.SearchRequest(user_id="u1"), reader, tenant="c")  # not kept
    entries = _new(served, start)
    assert [(e["action"], e["key_id"], e["outcome"]) for e in entries] == [
        ("DeleteUser", reader_id, "PERMISSION_DENIED"),
        ("Ingest", admin_id, "PERMISSION_DENIED"),
        ("Search", admin_id, "PERMISSION_DENIED")]
    assert entries[0]["detail"] == why and "'delete' scope" in why
    assert entries[0]["user"] == "u1"
    assert "tenant 'c'" in entries[2]["detail"]
    text = served.audit_path.read_text()
    assert reader not in text and admin not in text  # key ids only, never a key


def test_exports_and_admin_calls_are_recorded(served: Scoped):
    key_id, key = served.key("a", ["read", "admin"], tenants=["b"])
    start = _head(served)
    with MemoryClient(served.address, api_key=key) as client:
        exported = list(client.export_user("a", "u3"))
        client.list_users("b")  # another tenant's users: an admin call
        client.list_users()  # its own: a plain read, not recorded
    entries = _new(served, start)
    assert [(e["action"], e["tenant"], e["user"]) for e in entries] == [
        ("ExportUser", "a", "u3"), ("ListUsers", "b", "")]
    assert entries[0]["records"] == sum(s.messages for s in exported) > 0
    assert entries[1]["records"] == len(served.memory.docs.list_users("b"))
    assert all(e["key_id"] == key_id and e["outcome"] == "OK" for e in entries)


def test_an_admin_key_reads_its_tenants_entries_in_pages_and_no_other_key_reads_any(
        served: Scoped):
    _, deleter = served.key("b", ["read", "write", "delete"])
    served.memory.ingest([small_session("b", "temp", "t1"), small_session("b", "temp2", "t2")])
    with MemoryClient(served.address, api_key=deleter) as client:
        client.delete(Scope(tenant_id="b", user_id="temp"))
        client.delete(Scope(tenant_id="b", user_id="temp2"))
        with pytest.raises(RemoteError) as info:
            client.read_audit()
        assert info.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert "'admin' scope" in info.value.details
    _, admin = served.key("b", ["admin"])
    with MemoryClient(served.address, api_key=admin) as client:
        seen, after = [], 0
        while True:
            got = client.read_audit(limit=1, after_seq=after)
            assert len(got.items) <= 1
            seen.extend(got.items)
            if got.next is None:
                break
            after = got.next
    on_file = [e for e in read_entries(served.audit_path) if e["tenant"] == "b"]
    # Its own ReadAudit calls come last and were written after the pages were read.
    assert [e["seq"] for e in seen] == [e["seq"] for e in on_file][:len(seen)]
    assert {"temp", "temp2"} <= {e["user_id"] for e in seen if e["action"] == "DeleteUser"}
    assert all(e["tenant_id"] == "b" for e in seen)
    # The walk was recorded once (its first page), so it ended; so was the refused read.
    reads = [e for e in read_entries(served.audit_path) if e["action"] == "ReadAudit"]
    assert [e["outcome"] for e in reads] == ["PERMISSION_DENIED", "OK"]
    # The service has no call that writes, edits or removes an entry.
    assert not [m.name for m in pb.DESCRIPTOR.services_by_name["MemoryService"].methods
                if "Audit" in m.name and m.name != "ReadAudit"]
