"""One writer per embedded data dir, read-only opens, and opens that fail cleanly.

A real second process holds the data dir (``tests/support/hold_data_dir.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.memory import IndexMismatch, Memory, ReadOnlyMemory
from memstrata.model import Scope
from memstrata.roles import DataDirLocked
from memstrata.store.sqlite_docs import SqliteDocStore
from memstrata.store.tantivy_store import TantivyLexicalStore
from memstrata.store.types import StoreError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")


@contextmanager
def holder(data_dir: Path, *extra: str) -> Iterator[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.hold_data_dir", str(data_dir), *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=60)


def test_a_second_writer_is_told_who_holds_the_data_dir(tmp_path: Path):
    with holder(tmp_path) as proc:
        with pytest.raises(DataDirLocked) as info:
            Memory.open(Settings(data_dir=tmp_path))
        err = info.value
        assert err.pid == proc.pid and err.data_dir == str(tmp_path)
        assert "hold_data_dir" in (err.command or "") and err.host
        assert str(tmp_path) in str(err) and str(proc.pid) in str(err)
        # Qdrant Edge locks its files even to read: a read-only open is refused the same way.
        with pytest.raises(DataDirLocked):
            Memory.open(Settings(data_dir=tmp_path), read_only=True)
    # Once the holder exits, the lock is free again.
    with Memory.open(Settings(data_dir=tmp_path)) as memory:
        assert memory.sessions(MAYA) == []


def test_the_same_process_cannot_open_two_writers(tmp_path: Path):
    with Memory.open(Settings(data_dir=tmp_path)):
        with pytest.raises(DataDirLocked, match=str(os.getpid())):
            Memory.open(Settings(data_dir=tmp_path))


def test_tantivy_and_sqlite_read_while_another_process_writes(tmp_path: Path):
    settings = Settings(data_dir=tmp_path)
    with holder(tmp_path, "--ingest", str(SAMPLE)):
        lexical = TantivyLexicalStore(settings.lexical_dir, read_only=True)
        docs = SqliteDocStore(settings.docs_path, read_only=True)
        try:
            assert lexical.search(MAYA, "Lisbon seafood", 5)
            assert [m.session_id for m in docs.list_sessions(MAYA)]
            with pytest.raises(StoreError, match="read-only"):
                lexical.delete(MAYA)
            with pytest.raises(StoreError, match="read-only"):
                docs.delete(MAYA)
        finally:
            lexical.close()
            docs.close()


def test_a_read_only_memory_reads_and_refuses_writes(tmp_path: Path):
    from memstrata.ingest.formats import read_file

    with Memory.open(Settings(data_dir=tmp_path)) as memory:
        memory.ingest(read_file(SAMPLE).sessions)
    with Memory.open(Settings(data_dir=tmp_path), read_only=True) as memory:
        assert memory.search(MAYA, "half marathon")[0].session_id == "2024-04-10-running"
        assert memory.facts(MAYA, "2024-04-10-running").facts
        # Built once and cached (issue 34: a read-only process no longer rebuilds it on
        # every read); the turns and the index are untouched.
        assert memory.stats("acme").cached_layers == {"L1": 1}
        assert memory.layers.builds == 1
        memory.facts(MAYA, "2024-04-10-running")
        assert memory.layers.builds == 1
        with pytest.raises(ReadOnlyMemory):
            memory.delete(MAYA)
        with pytest.raises(ReadOnlyMemory):
            memory.ingest([])


def test_a_failed_open_releases_everything(tmp_path: Path, monkeypatch):
    import memstrata.store.factory as factory

    def broken(*args, **kwargs):
        raise StoreError("qdrant-edge: injected failure")

    monkeypatch.setattr(factory, "open_vector_store", broken)
    with pytest.raises(StoreError, match="injected"):
        Memory.open(Settings(data_dir=tmp_path))
    monkeypatch.undo()
    # The lock file and tantivy's writer lock were released: a writer opens at once.
    with Memory.open(Settings(data_dir=tmp_path)):
        pass


def test_another_encoder_is_refused_with_the_setting_and_the_way_out(tmp_path: Path):
    with Memory.open(Settings(data_dir=tmp_path)) as memory:
        stored = memory.fingerprint.as_dict()
    stored["embedder"] = "openai:text-embedding-3-small"
    docs = SqliteDocStore(Settings(data_dir=tmp_path).docs_path)
    from memstrata.memory import _FINGERPRINT, _META_SCOPE, _META_SESSION
    docs.put_layer(_META_SCOPE, _META_SESSION, _FINGERPRINT, "1", stored)
    docs.close()
    with pytest.raises(IndexMismatch, match="MEMSTRATA_EMBED_BACKEND") as info:
        Memory.open(Settings(data_dir=tmp_path))
    assert "memstrata ingest" in str(info.value)
    # Refused cleanly: nothing stays locked.
    with pytest.raises(IndexMismatch):
        Memory.open(Settings(data_dir=tmp_path))
