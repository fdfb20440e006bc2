"""Scoped keys over a real server (issue 36 item 5).

Every RPC of the service descriptor has a scope entry and is refused without its
scope (PERMISSION_DENIED naming it) and served with it; a platform key for
tenants ``a`` and ``b`` writes both and cannot touch ``c``; a key bound to one
user cannot reach another; ``ListUsers`` pages through a tenant's users; a
mixed-tenant file sent with a platform key writes what it may and names the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from typer.testing import CliRunner

from memstrata.client import MemoryClient
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.model import Scope
from memstrata.rpc import memory_pb2 as pb
from query_service import scopes
from tests.integration.query_service.scoped import A_USERS, SERVICE, Scoped, scoped_server

DENIED = grpc.StatusCode.PERMISSION_DENIED
ALL = ("read", "write", "delete", "admin")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory,
           embedder: MiniLMEmbedder) -> Iterator[Scoped]:
    with scoped_server(tmp_path_factory.mktemp("scopes"), embedder) as s:
        yield s


def _request(method: str) -> object:
    return getattr(pb, SERVICE.methods_by_name[method].input_type.name)()


def test_every_rpc_of_the_service_has_a_scope_and_a_user_rule():
    """A new RPC without entries here fails this test (and is refused by the server)."""
    rpcs = {m.name for m in SERVICE.methods}
    assert rpcs - set(scopes.REQUIRED) == set(), "RPCs without a scope in query_service/scopes.py"
    assert set(scopes.REQUIRED) - rpcs == set(), "scopes.py names RPCs the proto does not have"
    assert rpcs - set(scopes.USERS) == set(), "RPCs without a user rule in query_service/scopes.py"
    assert set(scopes.REQUIRED.values()) <= {*ALL, None}
    # What each kind of call needs: deletes delete, writes write, the audit admin, the rest read.
    kinds = {"DeleteSession": "delete", "DeleteUser": "delete", "Ingest": "write",
             "IngestBatch": "write", "CloseSession": "write", "ReadAudit": "admin",
             "DescribeKey": None}
    for rpc in rpcs:
        assert scopes.REQUIRED[rpc] == kinds.get(rpc, "read"), rpc


def test_every_rpc_is_refused_without_its_scope_and_served_with_it(served: Scoped):
    for method in (m.name for m in SERVICE.methods):
        scope = scopes.REQUIRED[method]
        if scope is None:  # any valid key
            _, key = served.key("acme", ["read"])
            assert served.call(method, _request(method), key) is not None
            continue
        _, without = served.key("acme", [s for s in ALL if s != scope])
        code, details = served.refusal(method, _request(method), without)
        assert code == DENIED, (method, code, details)
        assert f"needs the {scope!r} scope" in details and method in details
        _, only = served.key("acme", [scope])
        try:  # an empty request: refused for what it lacks, never for the key's scope
            served.call(method, _request(method), only)
        except grpc.RpcError as exc:
            assert exc.code() != DENIED, (method, exc.details())


def test_describe_key_says_what_the_key_may_do_and_a_write_only_key_learns_its_tenant(
        served: Scoped):
    key_id, key = served.key("plat", ["write"], tenants=["b", "a"])
    with MemoryClient(served.address, api_key=key) as client:
        info = client.describe_key()
        assert (info.key_id, info.tenant_id, info.tenants, info.scopes, info.user_id) == (
            key_id, "plat", ("a", "b", "plat"), ("write",), None)
        assert client.key_tenant() == "plat"  # no read scope needed


def test_a_platform_key_for_a_and_b_writes_both_and_cannot_touch_c(served: Scoped):
    _, key = served.key("a", ["read", "write", "delete"], tenants=["b"])
    c_before = served.memory.sessions(Scope(tenant_id="c", user_id="carl"))
    event = pb.TurnEvent(user_id="pia", session_id="p1", message_id="m1", role="user",
                         content="Platform event.")
    # Per-event tenants: one batch for a and b.
    batch = pb.IngestBatchRequest(events=[
        pb.TurnEvent(**{**_fields(event), "tenant_id": "a"}),
        pb.TurnEvent(**{**_fields(event), "tenant_id": "b", "message_id": "m2"})])
    assert served.call("IngestBatch", batch, key).accepted == 2
    for tenant in ("a", "b"):
        assert served.memory.sessions(Scope(tenant_id=tenant, user_id="pia"))
    # The tenant header picks b; reads and writes there work.
    assert served.call("ListSessions", pb.ListSessionsRequest(user_id="bob"), key, "b").sessions
    # c: refused by header, by event, for reads, writes and deletes alike.
    for method, request in [
            ("Search", pb.SearchRequest(user_id="carl", queries=["tea"])),
            ("ListSessions", pb.ListSessionsRequest(user_id="carl")),
            ("IngestBatch", pb.IngestBatchRequest(events=[event])),
            ("DeleteUser", pb.UserRequest(user_id="carl")),
            ("ListUsers", pb.ListUsersRequest()),
            ("ExportUser", pb.ExportRequest(user_id="carl"))]:
        code, details = served.refusal(method, request, key, tenant="c")
        assert code == DENIED and "tenant 'c'" in details, (method, details)
    mixed = pb.IngestBatchRequest(events=[
        pb.TurnEvent(**{**_fields(event), "tenant_id": "a", "message_id": "m3"}),
        pb.TurnEvent(**{**_fields(event), "tenant_id": "c", "message_id": "m4"})])
    code, details = served.refusal("IngestBatch", mixed, key)
    assert code == DENIED and details.startswith("events[1].tenant_id:") and "'c'" in details
    assert served.memory.sessions(Scope(tenant_id="c", user_id="carl")) == c_before
    assert not served.memory.sessions(Scope(tenant_id="c", user_id="pia"))
    # A key of tenant a alone may not name b in an event either.
    _, plain = served.key("a", ["write"])
    code, details = served.refusal("Ingest", pb.IngestRequest(event=pb.TurnEvent(
        **{**_fields(event), "tenant_id": "b", "message_id": "m5"})), plain)
    assert code == DENIED and details.startswith("event.tenant_id:")


def _fields(event: pb.TurnEvent) -> dict[str, Any]:
    return {f.name: getattr(event, f.name) for f, _ in event.ListFields()}


def test_a_key_bound_to_one_user_cannot_reach_another(served: Scoped):
    _, key = served.key("a", ["read", "write", "delete"], user="u1")
    assert served.call("ListSessions", pb.ListSessionsRequest(user_id="u1"), key).sessions
    assert served.call("ListEntities", pb.ListEntitiesRequest(user_id="u1"), key).entities
    for method, request, where in [
            ("ListSessions", pb.ListSessionsRequest(user_id="u2"), "user_id:"),
            ("ReadRaw", pb.ReadRawRequest(user_id="u2", session_id="s-u2"), "user_id:"),
            ("GetProfile", pb.GetProfileRequest(user_id="u2", entity="me"), "user_id:"),
            ("ListEntities", pb.ListEntitiesRequest(user_id="u2"), "user_id:"),
            ("DeleteUser", pb.UserRequest(user_id="u2"), "user_id:"),
            ("IngestBatch", pb.IngestBatchRequest(events=[
                pb.TurnEvent(user_id="u1", session_id="x", message_id="1", role="user",
                             content="mine"),
                pb.TurnEvent(user_id="u2", session_id="x", message_id="2", role="user",
                             content="theirs")]), "events[1].user_id:"),
            ("ExportUser", pb.ExportRequest(all_users=True), "all_users:"),
            ("ListUsers", pb.ListUsersRequest(), "ListUsers:"),
            ("GetStats", pb.GetStatsRequest(), "GetStats:")]:
        code, details = served.refusal(method, request, key)
        assert code == DENIED and details.startswith(where), (method, details)
        assert "bound to user 'u1'" in details
    assert served.memory.sessions(Scope(tenant_id="a", user_id="u2"))  # nothing deleted


def test_list_users_pages_through_one_tenant_in_id_order(served: Scoped):
    _, key = served.key("a", ["read"])
    with MemoryClient(served.address, api_key=key) as client:
        pages, after = [], None
        while True:
            page = client.list_users(limit=3, after=after)
            pages.append(page.items)
            if page.next is None:
                break
            after = page.next
    everyone = [u for p in pages for u in p]
    assert everyone == served.memory.docs.list_users("a")  # the store's list, paged
    assert set(A_USERS) <= set(everyone) and "bob" not in everyone and "maya" not in everyone
    assert all(len(p) == 3 for p in pages[:-1]) and 1 <= len(pages[-1]) <= 3
    code, details = served.refusal("ListUsers", pb.ListUsersRequest(limit=100_000), key)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("limit:")
    # Another tenant of a platform key: read alone is not enough, admin is.
    _, reader = served.key("a", ["read"], tenants=["b"])
    code, details = served.refusal("ListUsers", pb.ListUsersRequest(), reader, tenant="b")
    assert code == DENIED and "'admin' scope" in details
    _, admin = served.key("a", ["read", "admin"], tenants=["b"])
    assert list(served.call("ListUsers", pb.ListUsersRequest(), admin, "b").user_ids) == [
        u for u in served.memory.docs.list_users("b")]


def test_remote_ingest_of_a_mixed_tenant_file_writes_what_it_may_and_names_the_rest(
        served: Scoped, tmp_path: Path):
    from memstrata.cli import _register_subcommands, app

    _register_subcommands()
    _, key = served.key("a", ["read", "write"], tenants=["b"])
    lines = []
    for tenant, user, sid in [("a", "mix-a", "ma1"), ("c", "mix-c", "mc1"),
                              ("b", "mix-b", "mb1"), ("c", "mix-c", "mc2")]:
        for role, text in (("user", "We talked about green tea."), ("assistant", "Noted.")):
            lines.append(json.dumps({"tenant_id": tenant, "user_id": user, "session_id": sid,
                                     "session_date": "2024-05-01", "role": role,
                                     "content": text}))
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        app, ["ingest", str(path), "--remote", served.address, "--data-dir",
              str(tmp_path / "cli")], env={"MEMSTRATA_API_KEY": key, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "2 sessions refused" in result.output
    assert "session 'mc1'" in result.output and "session 'mc2'" in result.output
    assert served.memory.sessions(Scope(tenant_id="a", user_id="mix-a"))
    assert served.memory.sessions(Scope(tenant_id="b", user_id="mix-b"))
    assert not served.memory.sessions(Scope(tenant_id="c", user_id="mix-c"))
