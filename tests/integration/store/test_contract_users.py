"""Contract of the doc stores' listings for export: a tenant's users, a session's cached layers.

Proves, for SQLite and OpenSearch: ``list_users`` names each user of one tenant
once (however many sessions it holds), in id order, never a user of another
tenant (a colliding user id included), page by page with ``after``/``limit``
(every user exactly once across pages); a deleted user leaves the listing;
``session_layers`` returns every cached payload of one session under every
builder version, ordered by layer then builder, and nothing of another session,
user or tenant.
"""

from __future__ import annotations

from memstrata.model import Scope, SessionMeta
from memstrata.store.types import CachedLayer, DocStore
from tests.integration.store.support import ALICE, BOB, MALLORY


def _session(scope: Scope, sid: str) -> SessionMeta:
    return SessionMeta(scope=scope, session_id=sid)


def test_list_users_of_one_tenant_in_pages(doc_store: DocStore) -> None:
    users = ["u07", "u01", "u13", "u02", "u11", "u05", "u09"]
    for u in users:
        for sid in ("s1", "s2"):  # two sessions each: a user is named once
            doc_store.put_session(_session(Scope(tenant_id="tenant-a", user_id=u), sid))
    doc_store.put_session(_session(Scope(tenant_id="tenant-b", user_id="u03"), "s1"))
    doc_store.put_session(_session(Scope(tenant_id="tenant-b", user_id="u01"), "s9"))

    assert doc_store.list_users("tenant-a") == sorted(users)
    assert doc_store.list_users("tenant-b") == ["u01", "u03"]
    assert doc_store.list_users("tenant-c") == []

    pages: list[list[str]] = []
    after: str | None = None
    while True:
        page = doc_store.list_users("tenant-a", after=after, limit=3)
        if not page:
            break
        pages.append(page)
        after = page[-1]
    assert pages == [["u01", "u02", "u05"], ["u07", "u09", "u11"], ["u13"]]
    assert doc_store.list_users("tenant-a", after="u05", limit=2) == ["u07", "u09"]
    assert doc_store.list_users("tenant-a", limit=0) == []


def test_a_deleted_user_leaves_the_listing(doc_store: DocStore) -> None:
    doc_store.put_session(_session(ALICE, "s1"))
    doc_store.put_session(_session(BOB, "s1"))
    doc_store.put_session(_session(MALLORY, "s1"))  # same user id as ALICE, other tenant
    assert doc_store.list_users(ALICE.tenant_id) == ["alice", "bob"]
    doc_store.delete(ALICE)
    assert doc_store.list_users(ALICE.tenant_id) == ["bob"]
    assert doc_store.list_users(MALLORY.tenant_id) == ["alice"]


def test_session_layers_lists_every_cached_payload_of_one_session(doc_store: DocStore) -> None:
    for scope in (ALICE, BOB, MALLORY):
        doc_store.put_session(_session(scope, "s1"))
    doc_store.put_layer(ALICE, "s1", "L2", "extractive-1", {"items": ["n"], "digest": "d"})
    doc_store.put_layer(ALICE, "s1", "L1", "llm-2", {"items": [{"text": "b"}], "digest": "d"})
    doc_store.put_layer(ALICE, "s1", "L1", "extractive-1", {"items": [{"text": "a"}]})
    doc_store.put_layer(ALICE, "s2", "L1", "extractive-1", {"items": ["other session"]})
    doc_store.put_layer(BOB, "s1", "L1", "extractive-1", {"items": ["other user"]})
    doc_store.put_layer(MALLORY, "s1", "L1", "extractive-1", {"items": ["other tenant"]})

    assert doc_store.session_layers(ALICE, "s1") == [
        CachedLayer("L1", "extractive-1", {"items": [{"text": "a"}]}),
        CachedLayer("L1", "llm-2", {"items": [{"text": "b"}], "digest": "d"}),
        CachedLayer("L2", "extractive-1", {"items": ["n"], "digest": "d"}),
    ]
    assert doc_store.session_layers(ALICE, "missing") == []
    assert [c.payload for c in doc_store.session_layers(MALLORY, "s1")] == [
        {"items": ["other tenant"]}]
