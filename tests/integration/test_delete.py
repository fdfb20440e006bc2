"""Deletes: the digest goes first, a failure in any store is reported, a retry finishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.store.types import StoreError

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
TRIP = "2024-03-02-trip"


def open_memory(path: Path, embedder, **overrides) -> Memory:
    settings = Settings(data_dir=path, **overrides)
    return Memory(settings, ExtractiveBuilder(), embedder, open_vector_store(settings, embedder.dim),
                  open_lexical_store(settings), open_doc_store(settings))


def counts(m: Memory) -> tuple[int, int, int]:
    return m.vectors.count(MAYA), m.lexical.count(MAYA), m.docs.count_turns(MAYA)


@pytest.mark.parametrize("failing", ["vectors", "lexical", "docs"])
@pytest.mark.parametrize("session_id", [TRIP, None])
def test_a_delete_that_fails_part_way_is_reported_and_finished_by_a_retry(
        tmp_path: Path, embedder, monkeypatch, failing, session_id):
    with open_memory(tmp_path, embedder) as m:
        m.ingest(read_file(SAMPLE).sessions)
        store = getattr(m, failing)

        def broken(*args, **kwargs):  # test double: this store's delete fails once
            raise StoreError(f"{failing}: injected failure")

        monkeypatch.setattr(store, "delete", broken)
        receipt = m.delete(MAYA, session_id)
        assert not receipt.complete and failing not in receipt.removed
        assert "injected failure" in receipt.errors[failing]
        order = ["vectors", "lexical", "docs"]
        after = order[order.index(failing) + 1:]
        assert all(receipt.errors[n].startswith("not attempted") for n in after)
        # Digests were cleared first: whatever is left is redone by a re-ingest, never skipped.
        left = [s.session_id for s in m.sessions(MAYA) if session_id in (None, s.session_id)]
        assert all(m.docs.session_digest(MAYA, s) is None for s in left)
        if failing != "docs":
            assert left  # the doc store goes last, so the sessions are still listed
        monkeypatch.undo()
        retry = m.delete(MAYA, session_id)
        assert retry.complete and retry.errors == {}
        if session_id is None:
            assert counts(m) == (0, 0, 0) and m.sessions(MAYA) == []
        else:
            assert TRIP not in {s.session_id for s in m.sessions(MAYA)}
            assert all(h.session_id != TRIP for h in m.search(MAYA, "Lisbon trip Sintra"))
            assert m.docs.get_turns(MAYA, TRIP) == []


def test_the_receipt_counts_what_each_store_removed(tmp_path: Path, embedder):
    with open_memory(tmp_path, embedder) as m:
        m.ingest(read_file(SAMPLE).sessions)
        turns = len(m.raw(MAYA, TRIP))
        receipt = m.delete(MAYA, TRIP)
        assert receipt.complete
        assert receipt.removed == {"vectors": turns, "lexical": turns, "docs": turns}


def test_changing_the_window_settings_rebuilds_on_ingest(tmp_path: Path, embedder):
    sessions = read_file(SAMPLE).sessions
    with open_memory(tmp_path, embedder) as m:
        m.ingest(sessions)
        assert m.ingest(sessions).unchanged == len(sessions)
    with open_memory(tmp_path, embedder) as m:
        m.check_fingerprint()
        assert m.changed_settings == []
    with open_memory(tmp_path, embedder, l0_window_turns=2) as m:
        m.check_fingerprint(record=False)
        assert m.changed_settings == ["window_turns: 4 -> 2 (MEMSTRATA_L0_WINDOW_TURNS)"]
        report = m.ingest(sessions)
        assert report.unchanged == 0 and report.sessions == len(sessions)
        assert m.ingest(sessions).unchanged == len(sessions)


LEO = Scope(tenant_id="acme", user_id="leo")


def test_a_delete_leaves_none_of_the_users_units_in_the_process_caches(tmp_path: Path,
                                                                       embedder) -> None:
    """Searches fill the parsed-unit, facts and wire caches; a deleted session's, then a
    deleted user's units must leave them all (they hold the text until pushed out)."""
    from memstrata.rpc.convert import hit_to_wire
    from memstrata.unit_caches import held_units

    def held(scope: Scope, session_id: str | None = None) -> list[str]:
        return [u.id for u in held_units()
                if u.scope == scope and session_id in (None, u.session_id)]

    with open_memory(tmp_path, embedder) as m:
        m.ingest(read_file(SAMPLE).sessions)
        for scope in (MAYA, LEO):
            for hit in m.search(scope, ["sister trip food", "dog walk"], top_k=10):
                hit_to_wire(hit)  # what a Search reply does
        assert held(MAYA, TRIP) and held(LEO)
        m.delete(MAYA, TRIP)
        assert held(MAYA, TRIP) == []
        assert held(MAYA) and held(LEO)  # the rest stays cached
        m.delete(MAYA)
        assert held(MAYA) == []
        assert held(LEO)
