"""Contract of :class:`DocStore`, run against every implementation.

Proves, for SQLite and OpenSearch: session metadata (aware, naive and missing
dates, labels) and its digest round-trip and are replaced on re-put; sessions
list oldest first with undated ones last; turns are replaced by index and read
back in index order, all or a subset; units round-trip by id and per session
in turn order, unknown ids skipped; cached layers are replaced per (layer,
builder) and builder versions never mix; ``delete`` removes one session or one
scope across all record kinds; ``count_turns`` is per scope or global; data
survives close/reopen.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from memstrata.model import L0Unit, Message, Scope, SessionMeta, Turn
from memstrata.store.types import DocStore
from tests.integration.store.support import ALICE, BOB, Backend, unit_id


def meta(scope: Scope, session_id: str, date: datetime | None = None, **labels: str) -> SessionMeta:
    return SessionMeta(scope=scope, session_id=session_id, session_date=date, labels=labels)


def turn(index: int, text: str = "hello") -> Turn:
    return Turn(
        index=index,
        messages=[
            Message(
                role="user", content=f"{text} #{index}", speaker="Caroline", source_id=f"D1:{index}"
            ),
            Message(role="assistant", content=f"reply to {text} #{index}"),
        ],
    )


def unit(scope: Scope, session_id: str, index: int, summary: str = "summary") -> L0Unit:
    return L0Unit(
        id=unit_id(scope, session_id, index),
        scope=scope,
        session_id=session_id,
        session_date=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        turn_index=index,
        summary=f"{summary} {index}",
        keywords=["k1", "k2"],
        tags=["event"],
        source_ids=[f"D1:{index}"],
    )


def test_session_round_trip_and_replace(doc_store: DocStore) -> None:
    aware = datetime(2023, 5, 8, 13, 56, tzinfo=timezone(timedelta(hours=2)))
    naive = datetime(2022, 1, 2, 3, 4, 5)
    doc_store.put_session(meta(ALICE, "s1", aware, sample="conv-26", question="q-1"), digest="d1")
    doc_store.put_session(meta(ALICE, "s2", naive))
    doc_store.put_session(meta(ALICE, "s3"))

    got = doc_store.get_session(ALICE, "s1")
    assert got == meta(ALICE, "s1", aware, sample="conv-26", question="q-1")
    assert got is not None and got.session_date is not None
    assert got.session_date.utcoffset() == timedelta(hours=2)
    assert doc_store.get_session(ALICE, "s2") == meta(ALICE, "s2", naive)
    assert doc_store.get_session(ALICE, "s3") == meta(ALICE, "s3")
    assert doc_store.get_session(ALICE, "missing") is None
    assert doc_store.get_session(BOB, "s1") is None

    assert doc_store.session_digest(ALICE, "s1") == "d1"
    assert doc_store.session_digest(ALICE, "s2") is None
    assert doc_store.session_digest(ALICE, "missing") is None

    doc_store.put_session(meta(ALICE, "s1", naive, sample="conv-27"), digest="d2")
    assert doc_store.get_session(ALICE, "s1") == meta(ALICE, "s1", naive, sample="conv-27")
    assert doc_store.session_digest(ALICE, "s1") == "d2"
    assert len(doc_store.list_sessions(ALICE)) == 3


def test_list_sessions_oldest_first_undated_last(doc_store: DocStore) -> None:
    dates = {
        "c": datetime(2023, 3, 1),
        "a": datetime(2023, 1, 1, tzinfo=UTC),
        "e": None,
        "b": datetime(2023, 2, 1, tzinfo=timezone(timedelta(hours=-5))),
        "d": None,
        "f": datetime(2023, 2, 1, tzinfo=timezone(timedelta(hours=-5))),  # ties with "b"
    }
    for sid, date in dates.items():
        doc_store.put_session(meta(ALICE, sid, date))
    doc_store.put_session(meta(BOB, "zz", datetime(2020, 1, 1)))

    listed = doc_store.list_sessions(ALICE)

    assert [m.session_id for m in listed] == ["a", "b", "f", "c", "d", "e"]
    assert listed[0] == meta(ALICE, "a", dates["a"])
    assert doc_store.list_sessions(Scope(tenant_id="tenant-a", user_id="nobody")) == []


def test_turns_replace_by_index_and_read_in_order(doc_store: DocStore) -> None:
    doc_store.put_turns(ALICE, "s1", [turn(3), turn(1), turn(2), turn(5)])
    doc_store.put_turns(ALICE, "s2", [turn(1, "other")])

    assert doc_store.get_turns(ALICE, "s1") == [turn(1), turn(2), turn(3), turn(5)]
    assert doc_store.get_turns(ALICE, "s1", indices={5, 2}) == [turn(2), turn(5)]
    assert doc_store.get_turns(ALICE, "s1", indices=[4, 99]) == []
    assert doc_store.get_turns(ALICE, "s1", indices=[]) == []
    assert doc_store.get_turns(ALICE, "missing") == []
    assert doc_store.get_turns(BOB, "s1") == []

    doc_store.put_turns(ALICE, "s1", [turn(2, "edited")])
    assert doc_store.get_turns(ALICE, "s1", indices=[2]) == [turn(2, "edited")]
    assert doc_store.count_turns(ALICE) == 5
    assert doc_store.get_turns(ALICE, "s2") == [turn(1, "other")]


def test_units_round_trip_by_id_and_by_session(doc_store: DocStore) -> None:
    units = [unit(ALICE, "s1", i) for i in (3, 1, 2)] + [unit(ALICE, "s2", 1)]
    doc_store.put_units(units)
    doc_store.put_units([unit(BOB, "s1", 1)])

    assert doc_store.session_units(ALICE, "s1") == [unit(ALICE, "s1", i) for i in (1, 2, 3)]
    wanted = [unit_id(ALICE, "s2", 1), "no-such-id", unit_id(ALICE, "s1", 2), unit_id(BOB, "s1", 1)]
    assert doc_store.get_units(ALICE, wanted) == [unit(ALICE, "s2", 1), unit(ALICE, "s1", 2)]
    assert doc_store.get_units(ALICE, []) == []

    doc_store.put_units([unit(ALICE, "s1", 2, "rewritten")])
    assert doc_store.get_units(ALICE, [unit_id(ALICE, "s1", 2)]) == [
        unit(ALICE, "s1", 2, "rewritten")
    ]
    assert len(doc_store.session_units(ALICE, "s1")) == 3


def test_layers_replace_and_keep_builders_apart(doc_store: DocStore) -> None:
    v1 = {
        "facts": [{"text": "likes tea", "turn_indices": [1, 2]}],
        "score": 0.5,
        "nested": {"a.b": None},
    }
    doc_store.put_layer(ALICE, "s1", "L1", "builder-v1", v1)
    doc_store.put_layer(ALICE, "s1", "L1", "builder-v2", {"facts": []})
    doc_store.put_layer(ALICE, "s1", "L2", "builder-v1", {"notes": ["n"]})

    assert doc_store.get_layer(ALICE, "s1", "L1", "builder-v1") == v1
    assert doc_store.get_layer(ALICE, "s1", "L1", "builder-v2") == {"facts": []}
    assert doc_store.get_layer(ALICE, "s1", "L2", "builder-v1") == {"notes": ["n"]}
    assert doc_store.get_layer(ALICE, "s1", "L2", "builder-v2") is None
    assert doc_store.get_layer(ALICE, "s2", "L1", "builder-v1") is None
    assert doc_store.get_layer(BOB, "s1", "L1", "builder-v1") is None

    doc_store.put_layer(ALICE, "s1", "L1", "builder-v1", {"facts": ["replaced"]})
    assert doc_store.get_layer(ALICE, "s1", "L1", "builder-v1") == {"facts": ["replaced"]}
    assert doc_store.get_layer(ALICE, "s1", "L1", "builder-v2") == {"facts": []}


def _fill(store: DocStore, scope: Scope, session_id: str) -> None:
    store.put_session(meta(scope, session_id, datetime(2023, 1, 1)), digest="d")
    store.put_turns(scope, session_id, [turn(1), turn(2)])
    store.put_units([unit(scope, session_id, 1), unit(scope, session_id, 2)])
    store.put_layer(scope, session_id, "L1", "b", {"x": 1})


def _has_session(store: DocStore, scope: Scope, session_id: str) -> list[bool]:
    return [
        store.get_session(scope, session_id) is not None,
        bool(store.get_turns(scope, session_id)),
        bool(store.session_units(scope, session_id)),
        bool(store.get_units(scope, [unit_id(scope, session_id, 1)])),
        store.get_layer(scope, session_id, "L1", "b") is not None,
    ]


def test_delete_session_then_scope(doc_store: DocStore) -> None:
    for scope in (ALICE, BOB):
        for sid in ("s1", "s2"):
            _fill(doc_store, scope, sid)
    assert (doc_store.count_turns(ALICE), doc_store.count_turns(BOB), doc_store.count_turns()) == (
        4,
        4,
        8,
    )

    doc_store.delete(ALICE, "s1")
    assert _has_session(doc_store, ALICE, "s1") == [False] * 5
    assert _has_session(doc_store, ALICE, "s2") == [True] * 5
    assert _has_session(doc_store, BOB, "s1") == [True] * 5
    assert [m.session_id for m in doc_store.list_sessions(ALICE)] == ["s2"]
    assert doc_store.count_turns(ALICE) == 2

    doc_store.delete(ALICE)
    assert _has_session(doc_store, ALICE, "s2") == [False] * 5
    assert doc_store.list_sessions(ALICE) == []
    assert doc_store.count_turns(ALICE) == 0
    assert doc_store.count_turns() == 4
    assert _has_session(doc_store, BOB, "s1") == [True] * 5
    assert _has_session(doc_store, BOB, "s2") == [True] * 5


def test_reopen_keeps_everything(doc_backend: Backend[DocStore]) -> None:
    first = doc_backend.open()
    _fill(first, ALICE, "s1")
    first.flush()
    first.close()

    again = doc_backend.open()
    assert _has_session(again, ALICE, "s1") == [True] * 5
    assert again.session_digest(ALICE, "s1") == "d"
    assert again.count_turns() == 2


def test_stats_count_per_tenant_and_overall(doc_store: DocStore) -> None:
    other = Scope(tenant_id="globex", user_id="alice")
    for scope, sid in ((ALICE, "s1"), (ALICE, "s2"), (BOB, "s1"), (other, "s1")):
        doc_store.put_session(meta(scope, sid))
        doc_store.put_turns(scope, sid, [turn(1), turn(2)])
        doc_store.put_units([unit(scope, sid, 1)])
    doc_store.put_layer(ALICE, "s1", "L1", "b1", {"items": []})
    doc_store.put_layer(ALICE, "s2", "L1", "b1", {"items": []})
    doc_store.put_layer(other, "s1", "L2", "b1", {"items": []})
    acme = doc_store.stats(ALICE.tenant_id)
    assert acme == {"users": 2, "sessions": 3, "turns": 6, "units": 3, "layers": {"L1": 2}}
    everything = doc_store.stats()
    assert (everything["users"], everything["sessions"], everything["turns"]) == (3, 4, 8)
    assert everything["layers"] == {"L1": 2, "L2": 1}
    assert doc_store.stats("nobody")["sessions"] == 0
