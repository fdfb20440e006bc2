"""A write that fails part way leaves nothing of its batch behind (issue 31, item 8).

Before: a batch refused on a full disk was half stored (its raw turns were
written first, then indexing failed), and ``check --repair`` brought it back.
Now the search stores are written first and the doc store last, in one SQLite
transaction: a failure anywhere rolls back the turns, units and session records
of the batch, and the sessions it created are removed from the search stores.
A full volume is refused before any store is touched (``MEMSTRATA_MIN_FREE_MB``).

``FailingStore`` is a TEST DOUBLE: the real store, with one method failing as a
full disk makes it fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, SessionMeta
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.store.outage import OutOfSpace, store_failure
from memstrata.store.types import StoreError

USER = Scope(tenant_id="acme", user_id="dana")


class FailingStore:
    """TEST DOUBLE: the real store, but ``method`` raises a disk-full StoreError while armed."""

    def __init__(self, real: Any, method: str) -> None:
        self._real, self._method = real, method
        self.armed = False

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._real, name)
        if name != self._method:
            return target

        def failing(*args: Any, **kwargs: Any) -> Any:
            if self.armed:
                raise StoreError(f"sqlite: {name} failed: OperationalError: database or disk "
                                 f"is full")
            return target(*args, **kwargs)

        return failing


def _memory(path: Path, embedder: MiniLMEmbedder, fail: str, method: str,
            **settings: Any) -> tuple[Memory, FailingStore]:
    s = Settings(data_dir=path, **settings)
    stores: dict[str, Any] = {"vectors": open_vector_store(s, embedder.dim),
                              "lexical": open_lexical_store(s), "docs": open_doc_store(s)}
    double = stores[fail] = FailingStore(stores[fail], method)
    sessions = open_lexical_store(s, sessions=True)
    return Memory(s, ExtractiveBuilder(), embedder, stores["vectors"], stores["lexical"],
                  stores["docs"], session_lexical=sessions), double


def _batch(tag: str, sessions: int = 3) -> list[tuple[SessionMeta, list[Message]]]:
    return [(SessionMeta(scope=USER, session_id=f"{tag}{n}"),
             [Message(role="user", content=f"My {tag} plan {n}: paint the shed blue.",
                      source_id=f"{tag}{n}-1"),
              Message(role="assistant", content=f"Blue suits a shed ({tag} {n}).",
                      source_id=f"{tag}{n}-2")])
            for n in range(sessions)]


def _left(memory: Memory, prefix: str) -> dict[str, int]:
    """What each store holds of the sessions whose id starts with ``prefix``."""
    sids = [m.session_id for m in memory.docs.list_sessions(USER)
            if m.session_id.startswith(prefix)]
    turns = sum(len(memory.docs.get_turns(USER, sid)) for sid in
                {f"{prefix}{n}" for n in range(3)})
    hits = memory.search(USER, f"{prefix} plan paint the shed blue")
    return {"sessions": len(sids), "turns": turns,
            "hits": sum(1 for h in hits if h.session_id.startswith(prefix))}


@pytest.mark.parametrize(("store", "method"), [
    ("docs", "put_units"),    # inside the doc store's transaction: the turns roll back
    ("docs", "put_session"),  # its last write
    ("vectors", "upsert"),    # before the doc store is touched
    ("lexical", "upsert"),
])
def test_a_batch_that_fails_part_way_leaves_nothing(tmp_path: Path, embedder: MiniLMEmbedder,
                                                    store: str, method: str):
    memory, double = _memory(tmp_path, embedder, store, method)
    with memory:
        memory.append_batch(_batch("old", 1))
        memory.flush()
        double.armed = True
        with pytest.raises(StoreError) as failed:
            memory.append_batch(_batch("new"))
        assert store_failure(failed.value) == "full"
        double.armed = False  # space freed
        memory.flush()
        assert _left(memory, "new") == {"sessions": 0, "turns": 0, "hits": 0}
        assert memory.vectors.count_session(USER, "new0") == 0
        assert memory.lexical.count_session(USER, "new0") == 0
        assert _left(memory, "old")["turns"] == 1  # what was there before is intact
        reports = memory.append_batch(_batch("new"))  # the same batch goes in whole
        memory.flush()
        assert [r.duplicates for r in reports] == [0, 0, 0]
        assert _left(memory, "new") == {"sessions": 3, "turns": 3, "hits": 3}


def test_a_growing_session_keeps_its_turns_when_a_write_fails(tmp_path: Path,
                                                              embedder: MiniLMEmbedder):
    memory, double = _memory(tmp_path, embedder, "docs", "put_units")
    with memory:
        meta = SessionMeta(scope=USER, session_id="grow")
        memory.append_batch([(meta, [Message(role="user", content="I adopted a cat.",
                                             source_id="g1")])])
        double.armed = True
        with pytest.raises(StoreError):
            memory.append_batch([(meta, [Message(role="user", content="Her name is Mochi.",
                                                 source_id="g2")])])
        assert [m.source_id for t in memory.raw(USER, "grow") for m in t.messages] == ["g1"]
        double.armed = False
        memory.append_batch([(meta, [Message(role="user", content="Her name is Mochi.",
                                             source_id="g2")])])
        assert [m.source_id for t in memory.raw(USER, "grow") for m in t.messages] == [
            "g1", "g2"]


def test_a_full_volume_refuses_writes_before_any_store_is_touched(tmp_path: Path,
                                                                  embedder: MiniLMEmbedder):
    """With less free space than the reserve, nothing is written at all: Qdrant Edge
    writes through memory maps, and a full volume kills the process there (SIGBUS)."""
    memory, double = _memory(tmp_path, embedder, "vectors", "upsert", min_free_mb=10**6)
    with memory:
        with pytest.raises(OutOfSpace) as refused:
            memory.append_batch(_batch("big"))
        assert "MEMSTRATA_MIN_FREE_MB" in str(refused.value)
        assert store_failure(refused.value) == "full"
        assert _left(memory, "big") == {"sessions": 0, "turns": 0, "hits": 0}
        assert memory.vectors.count(USER) == 0
