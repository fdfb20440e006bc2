"""TantivyLexicalStore reopens its index every ``reopen_commits`` commits, losing nothing.

tantivy's ``Index`` keeps memory per commit until it is dropped (bench/tantivy_reopen.py
measures it), so a writer that commits for days reopens it now and then.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memstrata.config import Settings
from memstrata.store.types import LexicalDoc, StoreError
from memstrata.model import Scope
from memstrata.store.tantivy_store import TantivyLexicalStore

SCOPE = Scope(tenant_id="t", user_id="u")


def _doc(i: int, word: str = "lisbon") -> LexicalDoc:
    return LexicalDoc(id=f"d{i}", scope=SCOPE, session_id=f"s{i}", turn_index=0,
                      text=f"note {i} about {word}")


def test_every_nth_commit_reopens_and_every_write_stays_searchable(tmp_path: Path) -> None:
    store = TantivyLexicalStore(tmp_path / "lex", reopen_commits=3)
    try:
        for i in range(7):  # seven commits: reopened after the third and the sixth
            store.upsert([_doc(i)])
        assert store.reopens == 2
        assert sorted(h.session_id for h in store.search(SCOPE, "lisbon", 10)) == [
            f"s{i}" for i in range(7)]
        store.upsert([_doc(3, "porto")])  # a replace after a reopen: the old text is gone
        store.delete(SCOPE, "s0")
        assert [h.session_id for h in store.search(SCOPE, "porto", 10)] == ["s3"]
        assert len(store.search(SCOPE, "lisbon", 10)) == 5
        assert store.count(SCOPE) == 6
    finally:
        store.close()
    reopened = TantivyLexicalStore(tmp_path / "lex", read_only=True)
    assert reopened.count(SCOPE) == 6  # everything committed reached the files


def test_a_search_taken_before_a_reopen_still_answers(tmp_path: Path) -> None:
    store = TantivyLexicalStore(tmp_path / "lex", reopen_commits=2)
    try:
        store.upsert([_doc(0)])
        searcher, _ = store._searcher()
        store.upsert([_doc(1)])  # the second commit reopens the index
        assert store.reopens == 1
        assert searcher.num_docs == 1  # the old view still reads its own commit
        assert len(store.search(SCOPE, "lisbon", 10)) == 2  # the next search sees the new one
    finally:
        store.close()


def test_the_reopened_writer_holds_the_index_lock(tmp_path: Path) -> None:
    store = TantivyLexicalStore(tmp_path / "lex", reopen_commits=1)
    try:
        store.upsert([_doc(0)])
        assert store.reopens == 1
        with pytest.raises(StoreError, match="another process"):
            TantivyLexicalStore(tmp_path / "lex")  # a second writer is still refused
    finally:
        store.close()


def test_zero_never_reopens_and_deferred_upserts_wait_for_the_flush(tmp_path: Path) -> None:
    never = TantivyLexicalStore(tmp_path / "a", reopen_commits=0)
    deferred = TantivyLexicalStore(tmp_path / "b", reopen_commits=1, commit_on_write=False)
    try:
        for i in range(5):
            never.upsert([_doc(i)])
            deferred.upsert([_doc(i)])
        assert never.reopens == 0 and deferred.reopens == 0  # nothing committed yet
        deferred.flush()
        assert deferred.reopens == 1 and deferred.count(SCOPE) == 5
    finally:
        never.close()
        deferred.close()


def test_the_setting_reaches_the_store_and_is_bounded(tmp_path: Path) -> None:
    from memstrata.store.factory import open_lexical_store

    store = open_lexical_store(Settings(data_dir=tmp_path, tantivy_reopen_commits=7))
    try:
        assert isinstance(store, TantivyLexicalStore) and store.reopen_commits == 7
    finally:
        store.close()
    with pytest.raises(ValidationError, match="tantivy_reopen_commits"):
        Settings(tantivy_reopen_commits=-1)
