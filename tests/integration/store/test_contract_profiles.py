"""Contract of the doc store's profile records, run against every implementation.

Proves, for SQLite and OpenSearch: profile records round-trip by id as JSON
(accented text included), all of a scope or only some ids; a put replaces by
id and drops the ids it is told to, in one call; records never cross users or
tenants; deleting one session leaves them (the caller rewrites them) while
deleting the user removes them all; counts are per scope or global; they
survive close and reopen.
"""

from __future__ import annotations

from memstrata.model import Message, SessionMeta, Turn
from memstrata.store.types import DocStore
from tests.integration.store.support import ALICE, BOB, MALLORY, Backend


def record(name: str, *facts: str) -> dict[str, object]:
    return {"id": f"name:{name.lower()}", "view": {"name": name, "facts": list(facts)}}


def test_profiles_round_trip_replace_and_drop(doc_store: DocStore) -> None:
    assert doc_store.get_profiles(ALICE) == {}
    doc_store.put_profiles(ALICE, {"name:ines": record("Inês", "eats fish"),
                                   "user": record("Alice", "vegetarian"),
                                   "#index": {"keys": {"name:ines": "name:ines"}}})
    assert doc_store.get_profiles(ALICE) == {
        "name:ines": record("Inês", "eats fish"), "user": record("Alice", "vegetarian"),
        "#index": {"keys": {"name:ines": "name:ines"}}}
    assert doc_store.get_profiles(ALICE, ["user", "missing"]) == {
        "user": record("Alice", "vegetarian")}
    assert doc_store.get_profiles(ALICE, []) == {}

    doc_store.put_profiles(ALICE, {"user": record("Alice", "vegan")}, drop=["name:ines"])
    assert set(doc_store.get_profiles(ALICE)) == {"user", "#index"}
    assert doc_store.get_profiles(ALICE, ["user"])["user"] == record("Alice", "vegan")
    doc_store.put_profiles(ALICE, {}, drop=["#index", "never-there"])
    assert set(doc_store.get_profiles(ALICE)) == {"user"}
    assert doc_store.count_profiles(ALICE) == 1


def test_profiles_stay_in_their_scope(doc_store: DocStore) -> None:
    doc_store.put_profiles(ALICE, {"user": record("Alice")})
    doc_store.put_profiles(BOB, {"user": record("Bob")})
    doc_store.put_profiles(MALLORY, {"user": record("Mallory")})
    assert doc_store.get_profiles(ALICE) == {"user": record("Alice")}
    assert doc_store.get_profiles(BOB, ["user"]) == {"user": record("Bob")}
    doc_store.put_profiles(ALICE, {}, drop=["user"])
    assert doc_store.get_profiles(ALICE) == {}
    assert doc_store.get_profiles(MALLORY) == {"user": record("Mallory")}
    assert doc_store.count_profiles() == 2 and doc_store.count_profiles(BOB) == 1


def test_a_session_delete_keeps_profiles_a_user_delete_removes_them(doc_store: DocStore) -> None:
    meta = SessionMeta(scope=ALICE, session_id="s1")
    doc_store.put_session(meta)
    doc_store.put_turns(ALICE, "s1", [Turn(index=1, messages=[Message(role="user",
                                                                      content="hi")])])
    doc_store.put_profiles(ALICE, {"user": record("Alice")})
    doc_store.put_profiles(BOB, {"user": record("Bob")})
    doc_store.delete(ALICE, "s1")
    assert doc_store.get_profiles(ALICE) == {"user": record("Alice")}
    doc_store.delete(ALICE)
    assert doc_store.get_profiles(ALICE) == {} and doc_store.count_profiles(ALICE) == 0
    assert doc_store.get_profiles(BOB) == {"user": record("Bob")}


def test_profiles_survive_reopen_and_join_a_transaction(doc_backend: Backend[DocStore]) -> None:
    store = doc_backend.open()
    with store.atomic():
        store.put_profiles(ALICE, {"user": record("Alice", "runner")})
    store.close()
    again = doc_backend.open()
    assert again.get_profiles(ALICE) == {"user": record("Alice", "runner")}
