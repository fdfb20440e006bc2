"""Contract of :class:`VectorStore`, run against every implementation.

Proves, for Qdrant Edge and qdrant-client (local mode): a written vector is
found with cosine similarity ~1; re-upserting is idempotent and replaces by id;
hits come best first and respect ``limit``; ``session_ids`` restricts results;
``delete`` removes exactly one session or one scope; ``count`` is per scope or
global; data survives close/reopen; a wrong vector size is a StoreError.
"""

from __future__ import annotations

import numpy as np
import pytest

from memstrata.store.types import StoreError, VectorStore
from tests.integration.store.support import (
    ALICE,
    BOB,
    DIM,
    Backend,
    basis,
    unit_id,
    unit_vector,
    vrec,
)


def test_upsert_then_search_finds_the_record(vector_store: VectorStore) -> None:
    vector_store.upsert([vrec(ALICE, "s1", 1, basis(0)), vrec(ALICE, "s1", 2, basis(1))])
    vector_store.flush()

    hits = vector_store.search(ALICE, basis(1), limit=5)

    assert hits[0].unit_id == unit_id(ALICE, "s1", 2)
    assert hits[0].session_id == "s1"
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert {h.unit_id for h in hits} == {unit_id(ALICE, "s1", 1), unit_id(ALICE, "s1", 2)}


def test_reupsert_is_idempotent_and_replaces_by_id(vector_store: VectorStore) -> None:
    records = [vrec(ALICE, "s1", t, basis(t)) for t in range(1, 4)]
    vector_store.upsert(records)
    vector_store.upsert(records)
    vector_store.flush()
    assert vector_store.count(ALICE) == 3

    # Same id, new vector: the old position no longer matches it.
    vector_store.upsert([vrec(ALICE, "s1", 1, basis(5))])
    vector_store.flush()
    assert vector_store.count(ALICE) == 3
    top = vector_store.search(ALICE, basis(5), limit=1)[0]
    assert top.unit_id == unit_id(ALICE, "s1", 1)
    assert top.score == pytest.approx(1.0, abs=1e-4)
    assert vector_store.search(ALICE, basis(1), limit=1)[0].score < 0.5


def test_hits_are_ranked_by_cosine_and_limited(vector_store: VectorStore) -> None:
    # Decreasing similarity to basis(0): 1.0, 0.8, 0.6, 0.0, -1.0.
    weights = [(1.0, 0.0), (0.8, 0.6), (0.6, 0.8), (0.0, 1.0), (-1.0, 0.0)]
    vector_store.upsert([vrec(ALICE, "s1", i + 1, unit_vector(*w)) for i, w in enumerate(weights)])
    vector_store.flush()

    hits = vector_store.search(ALICE, basis(0), limit=10)
    assert [h.unit_id for h in hits] == [unit_id(ALICE, "s1", i + 1) for i in range(5)]
    assert [round(h.score, 3) for h in hits] == [1.0, 0.8, 0.6, 0.0, -1.0]

    # Not-normalised queries are compared by angle, not length.
    assert [h.unit_id for h in vector_store.search(ALICE, 7 * basis(0), limit=2)] == [
        unit_id(ALICE, "s1", 1),
        unit_id(ALICE, "s1", 2),
    ]
    assert len(vector_store.search(ALICE, basis(0), limit=3)) == 3
    assert vector_store.search(ALICE, basis(0), limit=0) == []


def test_session_ids_restrict_the_search(vector_store: VectorStore) -> None:
    vector_store.upsert(
        [vrec(ALICE, s, t, unit_vector(1.0, 0.1 * t)) for s in ("s1", "s2", "s3") for t in (1, 2)]
    )
    vector_store.flush()

    hits = vector_store.search(ALICE, basis(0), limit=10, session_ids={"s1", "s3"})
    assert len(hits) == 4
    assert {h.session_id for h in hits} == {"s1", "s3"}
    assert vector_store.search(ALICE, basis(0), limit=10, session_ids=["s2"])[0].session_id == "s2"
    assert vector_store.search(ALICE, basis(0), limit=10, session_ids=[]) == []
    assert vector_store.search(ALICE, basis(0), limit=10, session_ids=["nope"]) == []


def test_delete_session_then_scope(vector_store: VectorStore) -> None:
    vector_store.upsert([vrec(sc, s, 1, basis(0)) for sc in (ALICE, BOB) for s in ("s1", "s2")])
    vector_store.flush()
    assert (vector_store.count(ALICE), vector_store.count(BOB), vector_store.count()) == (2, 2, 4)

    vector_store.delete(ALICE, "s1")
    vector_store.flush()
    assert [h.session_id for h in vector_store.search(ALICE, basis(0), limit=10)] == ["s2"]
    assert vector_store.count(BOB) == 2  # BOB's s1 untouched

    vector_store.delete(ALICE)
    vector_store.flush()
    assert vector_store.count(ALICE) == 0
    assert vector_store.search(ALICE, basis(0), limit=10) == []
    assert vector_store.count(BOB) == 2
    assert vector_store.count() == 2


def test_writes_are_visible_without_flush(vector_store: VectorStore) -> None:
    vector_store.upsert([vrec(ALICE, "s1", 1, basis(0))])
    assert vector_store.count(ALICE) == 1
    assert vector_store.search(ALICE, basis(0), limit=1)[0].unit_id == unit_id(ALICE, "s1", 1)


def test_reopen_keeps_records(vector_backend: Backend[VectorStore]) -> None:
    first = vector_backend.open()
    first.upsert([vrec(ALICE, "s1", 1, basis(2))])
    first.flush()
    first.close()

    again = vector_backend.open()
    assert again.count(ALICE) == 1
    assert again.search(ALICE, basis(2), limit=1)[0].unit_id == unit_id(ALICE, "s1", 1)
    again.close()

    # Reopening with another embedding size must fail loudly, not corrupt the index.
    with pytest.raises(StoreError):
        vector_backend.open(dim=DIM * 2)


def test_wrong_vector_size_is_a_store_error(vector_store: VectorStore) -> None:
    with pytest.raises(StoreError, match="dimension"):
        vector_store.upsert([vrec(ALICE, "s1", 1, np.ones(DIM + 1, dtype=np.float32))])
    with pytest.raises(StoreError, match="dimension"):
        vector_store.search(ALICE, np.ones(DIM - 1, dtype=np.float32), limit=1)
    assert vector_store.count() == 0


def test_count_session_counts_one_session_of_one_scope(vector_store: VectorStore) -> None:
    vector_store.upsert([vrec(ALICE, "s1", 1, basis(0)), vrec(ALICE, "s1", 2, basis(1)),
                         vrec(ALICE, "s2", 1, basis(2)), vrec(BOB, "s1", 1, basis(0))])
    vector_store.flush()
    counts = [vector_store.count_session(sc, s)
              for sc, s in ((ALICE, "s1"), (ALICE, "s2"), (BOB, "s1"), (ALICE, "s9"))]
    assert counts == [2, 1, 1, 0]


def test_hits_without_sessions_rank_the_same(vector_store: VectorStore) -> None:
    """``sessions=False`` (the retriever reads sessions from the units): same ids and scores."""
    vector_store.upsert(
        [vrec(ALICE, s, t, unit_vector(1.0, 0.1 * t)) for s in ("s1", "s2") for t in (1, 2, 3)]
    )
    vector_store.flush()

    full = vector_store.search(ALICE, basis(0), limit=10)
    bare = vector_store.search(ALICE, basis(0), limit=10, sessions=False)
    assert [(h.unit_id, h.score) for h in bare] == [(h.unit_id, h.score) for h in full]
    assert {h.session_id for h in full} == {"s1", "s2"}
    assert {h.session_id for h in bare} == {""}
    # The session filter still applies when sessions are not returned.
    only = vector_store.search(ALICE, basis(0), limit=10, session_ids=["s2"], sessions=False)
    assert {h.unit_id for h in only} == {h.unit_id for h in full if h.session_id == "s2"}
