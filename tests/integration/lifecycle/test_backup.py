"""Backup and restore of an embedded data dir, with and without a process holding it.

* Nobody holds the data dir: the backup takes its lock; the restored data dir
  passes the full check and holds the same L0-L3 as the original; the
  manifest's counts are the restored doc store's.
* A process holds it (a writer thread appending all the while, as ``serve``'s
  stream worker does) and offers its write pause: the backup goes through the
  pause; every append acknowledged before the backup began is in the restored
  data dir, which passes the full check.
* While paused, an append waits; a pause that runs out fails the backup
  (``PauseExpired``) instead of calling an inconsistent copy a backup.
* A holder without a pause refuses the backup (``DataDirLocked``).
* Restore refuses a non-empty data dir, a folder without a manifest, and a
  backup whose file no longer matches its checksum (the target stays as it was).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from memstrata.check import check_memory
from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.lifecycle.backup import (
    MANIFEST,
    BackupError,
    backup,
    hold_writes,
    read_manifest,
    restore,
    write_manifest,
)
from memstrata.lifecycle.pause import PauseChannel, PauseExpired, pause_writes
from memstrata.memory import Memory
from memstrata.model import Message, Scope, SessionMeta
from memstrata.roles import DataDirLocked
from memstrata.store.lock import DataDirLock
from tests.integration.lifecycle.support import build_history, layers_snapshot, open_memory

LOAD = Scope(tenant_id="acme", user_id="load")


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory,
             embedder: MiniLMEmbedder) -> Iterator[Memory]:
    memory = open_memory(tmp_path_factory.mktemp("backup") / "original", embedder)
    try:
        build_history(memory)
        memory.flush()
        yield memory
    finally:
        memory.close()


def take_backup(settings: Settings, dest: Path, max_pause_s: float = 60.0) -> dict:
    with hold_writes(settings.data_dir, max_pause_s) as snapshot:
        manifest = backup(settings, dest, snapshot)
    manifest["paused_s"] = snapshot.paused_s
    write_manifest(dest, manifest)
    return manifest


def full_check(data_dir: Path, embedder: MiniLMEmbedder) -> tuple[list[str], Memory]:
    memory = open_memory(data_dir, embedder)
    report = check_memory(memory, deep=True)
    return [f.line() for f in report.findings], memory


def test_backup_of_an_idle_data_dir_restores_to_the_same_layers(
        original: Memory, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    # The fixture's memory takes no data-dir lock and writes nothing now: as after an ingest.
    manifest = take_backup(original.settings, tmp_path / "bk")
    assert manifest["consistency"] == "data dir locked: no other writer"
    assert manifest["paused_s"] == 0.0
    assert read_manifest(tmp_path / "bk")["files"] == manifest["files"]
    restore(tmp_path / "bk", tmp_path / "restored")
    problems, restored = full_check(tmp_path / "restored", embedder)
    try:
        assert problems == []
        stats = restored.docs.stats()
        assert {k: stats[k] for k in ("users", "sessions", "turns", "units")} == {
            k: manifest["counts"][k] for k in ("users", "sessions", "turns", "units")}
        assert manifest["counts"]["sessions"] == 45
        assert manifest["counts"]["cached_layers"] == {"L1": 2, "L2": 2}
        assert layers_snapshot(restored) == layers_snapshot(original)
    finally:
        restored.close()


def _message(i: int) -> Message:
    return Message(role="user" if i % 2 == 0 else "assistant",
                   content=f"Load message {i}: the kayak trip plan number {i} for June.",
                   source_id=f"load-{i}")


class Writer(threading.Thread):
    """Appends to one session without pause, recording each acknowledged message id."""

    def __init__(self, memory: Memory) -> None:
        super().__init__(daemon=True)
        self.memory = memory
        self.acked: list[str] = []
        self.stop = threading.Event()
        self.meta = SessionMeta(scope=LOAD, session_id="live",
                                session_date=datetime(2024, 6, 1, 9, 0))

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            self.memory.append_messages(self.meta, [_message(i), _message(i + 1)])
            self.memory.flush()  # what "stored" means for Ingest's acknowledgement
            self.acked += [f"load-{i}", f"load-{i + 1}"]
            i += 2


def test_backup_beside_a_writing_holder_keeps_everything_acknowledged_before_it(
        original: Memory, tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    settings = original.settings
    lock = DataDirLock(settings.data_dir, purpose="write").acquire()  # as serve holds it
    writer = Writer(original)
    try:
        with PauseChannel(original, settings.data_dir) as channel:
            writer.start()
            while len(writer.acked) < 6:
                time.sleep(0.05)
            acked_before = list(writer.acked)
            manifest = take_backup(settings, tmp_path / "bk")
            more = len(writer.acked)
            while len(writer.acked) < more + 4:  # writes went on after the backup
                time.sleep(0.05)
            assert channel.pauses == 1
    finally:
        writer.stop.set()
        writer.join(60)
        lock.release()
    assert manifest["consistency"].startswith("writes of memstrata serve (pid ")
    assert 0 < manifest["paused_s"] < 60
    restore(tmp_path / "bk", tmp_path / "restored")
    problems, restored = full_check(tmp_path / "restored", embedder)
    try:
        assert problems == []
        kept = {i for t in restored.raw(LOAD, "live") for i in t.source_ids}
        assert set(acked_before) <= kept
        assert len(kept) < len(writer.acked)  # the copy is of one instant, not of the end
        assert restored.docs.stats()["turns"] == manifest["counts"]["turns"]
    finally:
        restored.close()


def test_a_pause_holds_writes_and_one_that_runs_out_fails(original: Memory,
                                                          tmp_path: Path) -> None:
    data_dir = original.settings.data_dir
    meta = SessionMeta(scope=LOAD, session_id="held")
    with PauseChannel(original, data_dir):
        done = threading.Event()
        with pause_writes(data_dir, max_s=30):
            def write() -> None:
                original.append_messages(meta, [_message(0)])
                done.set()

            t = threading.Thread(target=write, daemon=True)
            t.start()
            assert not done.wait(0.5)  # the write waits for the pause
        assert done.wait(30)  # and lands once it ends
        with pytest.raises(PauseExpired, match="ran out"), pause_writes(data_dir, max_s=0.3):
            time.sleep(1.0)
        with pause_writes(data_dir, max_s=5):  # the channel serves the next pause
            pass


def test_a_holder_without_a_pause_refuses_the_backup(original: Memory, tmp_path: Path) -> None:
    lock = DataDirLock(original.settings.data_dir).acquire()
    try:
        with pytest.raises(DataDirLocked):
            take_backup(original.settings, tmp_path / "bk")
    finally:
        lock.release()
    assert not (tmp_path / "bk").exists()


def test_restore_refuses_what_it_must_not_restore(original: Memory, tmp_path: Path) -> None:
    take_backup(original.settings, tmp_path / "bk")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(BackupError, match="is not empty .*notes.txt"):
        restore(tmp_path / "bk", busy)
    with pytest.raises(BackupError, match="no manifest.json"):
        restore(tmp_path / "busy", tmp_path / "new")
    docs = tmp_path / "bk" / "docs.sqlite3"
    data = bytearray(docs.read_bytes())
    data[-100] ^= 0xFF
    docs.write_bytes(bytes(data))
    with pytest.raises(BackupError, match="docs.sqlite3: differs from the manifest"):
        restore(tmp_path / "bk", tmp_path / "new")
    assert not (tmp_path / "new").exists()
    assert not list(tmp_path.glob(".new.restoring-*"))
    assert (tmp_path / "bk" / MANIFEST).is_file()
