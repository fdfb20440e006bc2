"""Scoped keys (issue 36 item 5): the keys file's new fields, old files, and the rules.

Old keys files (no ``scopes``, ``user`` or ``tenants``) keep working with the
scopes every key had before; ``memstrata keys add/list/scopes`` set and show
them; the rules of ``query_service.scopes`` refuse what a key may not do,
naming the scope or the field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from memstrata.rpc import memory_pb2 as pb
from query_service import scopes
from query_service.audit import read_entries, verify
from query_service.keys import (
    DEFAULT_SCOPES,
    Grant,
    KeyEntry,
    KeyRing,
    add_key,
    parse_scopes,
    read_keys_file,
    revoke_key,
    set_scopes,
)

OLD_FILE = {"keys": {"a1b2c3": {"tenant": "acme", "sha256": "0" * 64,
                                "created": "2024-01-01T00:00:00+00:00", "revoked": False}},
            "tenants": {"acme": {"rate_per_s": 5}}}


def grant(*scope_names: str, user: str | None = None, tenants: tuple[str, ...] = ()) -> Grant:
    return Grant("k1", "acme", frozenset({"acme", *tenants}), frozenset(scope_names), user)


def test_an_old_keys_file_reads_with_the_old_powers_and_stays_old_when_written(tmp_path: Path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(OLD_FILE))
    entry = read_keys_file(path).keys["a1b2c3"]
    g = entry.grant("a1b2c3")
    assert g.scopes == set(DEFAULT_SCOPES) == {"read", "write", "delete"}
    assert (g.tenant, g.tenants, g.user) == ("acme", {"acme"}, None)
    add_key(path, "globex")  # a write of the file leaves the old entry as it was
    again = json.loads(path.read_text())["keys"]["a1b2c3"]
    assert "scopes" not in again and "user" not in again and "tenants" not in again


def test_a_key_with_scopes_a_user_and_other_tenants_is_what_the_ring_grants(tmp_path: Path):
    path = tmp_path / "keys.json"
    key_id, key = add_key(path, "plat", scopes=["write"], tenants=["a", "b", "plat"])
    bound_id, bound = add_key(path, "acme", scopes=["read"], user="maya")
    ring = KeyRing(path)
    g = ring.grant_for(key)
    assert g is not None and g.key_id == key_id
    assert (g.tenant, g.tenants, g.scopes, g.user) == ("plat", {"plat", "a", "b"}, {"write"},
                                                       None)
    assert read_keys_file(path).keys[key_id].tenants == ["a", "b"]  # its own not repeated
    b = ring.grant_for(bound)
    assert b is not None and (b.user, b.scopes, b.key_id) == ("maya", {"read"}, bound_id)
    assert ring.tenants == {"plat", "a", "b", "acme"}
    assert ring.tenant_for(key) == "plat"
    assert ring.grant_for(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    set_scopes(path, key_id, ["read", "admin"])
    assert KeyRing(path).grant_for(key).scopes == {"read", "admin"}  # type: ignore[union-attr]
    revoke_key(path, key_id)
    assert KeyRing(path).grant_for(key) is None


@pytest.mark.parametrize("text,message", [
    ("read,bogus", "scopes: unknown scope 'bogus'"),
    ("", "scopes: name at least one of read, write, delete, admin"),
    (" , ", "scopes: name at least one"),
])
def test_a_bad_scope_list_is_refused_naming_the_field(text: str, message: str):
    with pytest.raises(ValueError, match=message):
        parse_scopes(text)


def test_scopes_parse_in_a_fixed_order_and_bad_entries_do_not_validate():
    assert parse_scopes("ADMIN, read") == ["read", "admin"]
    for bad in ({"scopes": []}, {"scopes": ["read", "read"]}, {"scopes": ["root"]},
                {"tenants": ["a", "a"]}, {"user": "no spaces"}):
        with pytest.raises(ValidationError):
            KeyEntry(tenant="acme", sha256="0" * 64, **bad)


def test_each_scope_is_needed_by_its_calls_and_named_when_missing():
    for method, scope in scopes.REQUIRED.items():
        if scope is None:
            assert scopes.missing_scope(method, grant("read"), "acme") is None
            continue
        others = {"read", "write", "delete", "admin"} - {scope}
        why = scopes.missing_scope(method, grant(*others), "acme")
        assert why is not None and f"needs the {scope!r} scope" in why and method in why
        assert scopes.missing_scope(method, grant(scope), "acme") is None
    assert "no scope is defined" in str(scopes.missing_scope("Unlisted", grant("admin"), "acme"))


def test_listing_another_tenants_users_needs_admin_too():
    platform = grant("read", tenants=("b",))
    assert scopes.missing_scope("ListUsers", platform, "acme") is None
    why = scopes.missing_scope("ListUsers", platform, "b")
    assert why is not None and "'admin' scope for tenant 'b'" in why
    assert scopes.missing_scope("ListUsers", grant("read", "admin", tenants=("b",)), "b") is None
    assert scopes.audited("ListUsers", grant("read", "admin", tenants=("b",)), "b", False)
    assert not scopes.audited("ListUsers", platform, "acme", False)


def test_a_readaudit_walk_is_recorded_once_at_its_first_page():
    admin = grant("admin")
    assert scopes.recorded("ReadAudit", admin, "acme", pb.ReadAuditRequest())
    assert not scopes.recorded("ReadAudit", admin, "acme", pb.ReadAuditRequest(after_seq=4))
    assert scopes.recorded("DeleteUser", grant("delete"), "acme", pb.UserRequest())
    assert not scopes.recorded("Search", admin, "acme", pb.SearchRequest())


def test_a_bound_key_is_refused_other_users_and_tenant_wide_calls_naming_the_field():
    bound = grant("read", "write", "delete", user="maya")
    ok = pb.SearchRequest(user_id="maya", queries=["x"])
    assert scopes.refused_request("Search", ok, bound) is None
    assert scopes.refused_request("Search", pb.SearchRequest(user_id="leo"), bound) == (
        "user_id: this API key is bound to user 'maya'")
    batch = pb.IngestBatchRequest(events=[pb.TurnEvent(user_id="maya"),
                                          pb.TurnEvent(user_id="leo")])
    assert str(scopes.refused_request("IngestBatch", batch, bound)).startswith(
        "events[1].user_id:")
    one = pb.IngestRequest(event=pb.TurnEvent(user_id="leo"))
    assert str(scopes.refused_request("Ingest", one, bound)).startswith("event.user_id:")
    assert "all_users" in str(scopes.refused_request(
        "ExportUser", pb.ExportRequest(all_users=True), bound))
    for wide in ("GetStats", "ListUsers", "ReadAudit"):
        assert "span the tenant" in str(scopes.refused_request(wide, pb.GetStatsRequest(),
                                                               bound))
    assert scopes.refused_request("DescribeKey", pb.DescribeKeyRequest(), bound) is None
    # An unbound key may name any user of its tenant.
    assert scopes.refused_request("Search", pb.SearchRequest(user_id="leo"), grant("read")) \
        is None


def test_an_events_tenant_must_be_one_the_key_may_act_for():
    platform = grant("write", tenants=("b",))
    batch = pb.IngestBatchRequest(events=[pb.TurnEvent(user_id="u", tenant_id="b"),
                                          pb.TurnEvent(user_id="u", tenant_id="c")])
    assert scopes.refused_request("IngestBatch", batch, platform) == (
        "events[1].tenant_id: this API key may not act for tenant 'c'")
    batch.events[1].tenant_id = "acme"
    assert scopes.refused_request("IngestBatch", batch, platform) is None


def test_keys_commands_set_show_and_change_scopes_and_audit_each_change(tmp_path: Path):
    from memstrata.cli import _register_subcommands, app

    _register_subcommands()
    runner = CliRunner()
    base = ["--data-dir", str(tmp_path)]
    made = runner.invoke(app, ["keys", "add", "plat", "--scopes", "write", "--tenants",
                               "a,b", *base])
    assert made.exit_code == 0, made.output
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("msk_")
    key_id = key.split("_")[1]
    bad = runner.invoke(app, ["keys", "add", "plat", "--scopes", "read,root", *base])
    assert bad.exit_code == 2 and "--scopes: unknown scope 'root'" in bad.output
    listed = runner.invoke(app, ["keys", "list", *base], env={"COLUMNS": "200"})
    row = next(line for line in listed.output.splitlines() if key_id in line)
    assert "write" in row and "a,b" in row and "read" not in row
    changed = runner.invoke(app, ["keys", "scopes", key_id, "read,admin", *base])
    assert changed.exit_code == 0 and "scopes read,admin" in changed.output
    assert KeyRing(tmp_path / "service-keys.json").grant_for(key).scopes == {  # type: ignore
        "read", "admin"}
    assert runner.invoke(app, ["keys", "scopes", "nope", "read", *base]).exit_code == 1
    assert runner.invoke(app, ["keys", "revoke", key_id, *base]).exit_code == 0
    entries = list(read_entries(tmp_path / "audit.jsonl"))
    assert [e["action"] for e in entries] == ["keys.add", "keys.scopes", "keys.revoke"]
    assert all(e["via"] == "cli" and e["tenant"] == "plat" and key_id in e["detail"]
               for e in entries)
    assert key not in (tmp_path / "audit.jsonl").read_text()  # never the key itself
    assert verify(tmp_path / "audit.jsonl").ok
