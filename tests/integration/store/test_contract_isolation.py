"""Tenant and user isolation, for every implementation of every store interface.

Three scopes -- ALICE and BOB (two users of one tenant) and MALLORY (another
tenant, same user id as ALICE) -- write records with identical session ids,
identical texts and identical vectors. Proves that every read for one scope
returns only that scope's records, and that deleting one scope (or one of its
sessions) leaves the other scopes' identical records intact.
"""

from __future__ import annotations

from memstrata.model import L0Unit, Message, Scope, SessionMeta, Turn
from memstrata.store.types import DocStore, LexicalStore, VectorStore
from tests.integration.store.support import ALICE, BOB, MALLORY, ldoc, unit_id, unit_vector, vrec

SCOPES = (ALICE, BOB, MALLORY)
SESSIONS = ("s1", "s2")
QUERY = unit_vector(1.0, 0.2)


def _ids(scope: Scope) -> set[str]:
    return {unit_id(scope, s, t) for s in SESSIONS for t in (1, 2)}


def test_vector_store_isolates_scopes(vector_store: VectorStore) -> None:
    vector_store.upsert(
        [
            vrec(sc, s, t, unit_vector(1.0, 0.1 * t))
            for sc in SCOPES
            for s in SESSIONS
            for t in (1, 2)
        ]
    )
    vector_store.flush()
    assert vector_store.count() == 12

    for scope in SCOPES:
        hits = vector_store.search(scope, QUERY, limit=100)
        assert {h.unit_id for h in hits} == _ids(scope)
        assert {h.unit_id for h in vector_store.search(scope, QUERY, 100, session_ids=["s1"])} == {
            unit_id(scope, "s1", 1),
            unit_id(scope, "s1", 2),
        }
        assert vector_store.count(scope) == 4

    vector_store.delete(ALICE, "s1")
    vector_store.delete(MALLORY)
    vector_store.flush()
    assert {h.unit_id for h in vector_store.search(ALICE, QUERY, 100)} == {
        unit_id(ALICE, "s2", 1),
        unit_id(ALICE, "s2", 2),
    }
    assert {h.unit_id for h in vector_store.search(BOB, QUERY, 100)} == _ids(BOB)
    assert vector_store.search(MALLORY, QUERY, 100) == []
    assert (vector_store.count(ALICE), vector_store.count(BOB), vector_store.count(MALLORY)) == (
        2,
        4,
        0,
    )


def test_lexical_store_isolates_scopes(lexical_store: LexicalStore) -> None:
    lexical_store.upsert(
        [
            ldoc(sc, s, t, "shared secret about the lighthouse", ["lighthouse"])
            for sc in SCOPES
            for s in SESSIONS
            for t in (1, 2)
        ]
    )
    lexical_store.flush()
    assert lexical_store.count() == 12

    for scope in SCOPES:
        assert {h.unit_id for h in lexical_store.search(scope, "lighthouse secret", 100)} == _ids(
            scope
        )
        assert {h.unit_id for h in lexical_store.search(scope, "lighthouse", 100, ["s2"])} == {
            unit_id(scope, "s2", 1),
            unit_id(scope, "s2", 2),
        }
        assert lexical_store.count(scope) == 4

    lexical_store.delete(ALICE, "s1")
    lexical_store.delete(MALLORY)
    lexical_store.flush()
    assert {h.unit_id for h in lexical_store.search(ALICE, "lighthouse", 100)} == {
        unit_id(ALICE, "s2", 1),
        unit_id(ALICE, "s2", 2),
    }
    assert {h.unit_id for h in lexical_store.search(BOB, "lighthouse", 100)} == _ids(BOB)
    assert lexical_store.search(MALLORY, "lighthouse", 100) == []
    assert (lexical_store.count(ALICE), lexical_store.count(BOB), lexical_store.count(MALLORY)) == (
        2,
        4,
        0,
    )


def _turn(i: int) -> Turn:
    return Turn(index=i, messages=[Message(role="user", content="identical words")])


def _unit(scope: Scope, session_id: str, i: int) -> L0Unit:
    return L0Unit(
        id=unit_id(scope, session_id, i),
        scope=scope,
        session_id=session_id,
        turn_index=i,
        summary="identical summary",
    )


def test_doc_store_isolates_scopes(doc_store: DocStore) -> None:
    for sc in SCOPES:
        for s in SESSIONS:
            doc_store.put_session(
                SessionMeta(scope=sc, session_id=s, labels={"owner": str(sc)}), "dig"
            )
            doc_store.put_turns(sc, s, [_turn(1), _turn(2)])
            doc_store.put_units([_unit(sc, s, 1), _unit(sc, s, 2)])
            doc_store.put_layer(sc, s, "L1", "b", {"owner": str(sc)})
    assert doc_store.count_turns() == 12

    for scope in SCOPES:
        sessions = doc_store.list_sessions(scope)
        assert [(m.scope, m.labels["owner"]) for m in sessions] == [(scope, str(scope))] * 2
        for s in SESSIONS:
            got = doc_store.get_session(scope, s)
            assert got is not None and got.labels == {"owner": str(scope)}
        units = doc_store.session_units(scope, "s1") + doc_store.get_units(
            scope, [unit_id(sc, s, t) for sc in SCOPES for s in SESSIONS for t in (1, 2)]
        )
        assert {u.scope for u in units} == {scope}
        assert {u.id for u in units} == _ids(scope)
        assert doc_store.get_layer(scope, "s1", "L1", "b") == {"owner": str(scope)}
        assert doc_store.count_turns(scope) == 4

    doc_store.delete(ALICE, "s1")
    doc_store.delete(MALLORY)
    assert [m.session_id for m in doc_store.list_sessions(ALICE)] == ["s2"]
    assert doc_store.get_turns(ALICE, "s1") == []
    assert [m.session_id for m in doc_store.list_sessions(BOB)] == ["s1", "s2"]
    assert doc_store.get_turns(BOB, "s1") == [_turn(1), _turn(2)]
    assert doc_store.get_layer(BOB, "s1", "L1", "b") == {"owner": str(BOB)}
    assert {u.id for u in doc_store.session_units(BOB, "s1")} == {
        unit_id(BOB, "s1", 1),
        unit_id(BOB, "s1", 2),
    }
    assert doc_store.list_sessions(MALLORY) == []
    assert doc_store.get_units(MALLORY, _ids(MALLORY)) == []
    assert (
        doc_store.count_turns(ALICE),
        doc_store.count_turns(BOB),
        doc_store.count_turns(MALLORY),
    ) == (2, 4, 0)
