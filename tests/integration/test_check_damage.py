"""``memstrata check`` on damaged store files: found, named with the fix, and rebuilt.

Each test copies one small data dir (``examples/sample_turns.jsonl`` ingested
through the Memory API on the real embedded stores), damages one file the
way a crash or a bad disk would (a Qdrant Edge vector file cut short, vectors
overwritten, a shard that no longer opens, a tantivy segment cut short or
overwritten), then runs the command as a user would: ``check`` names the
damage and ``memstrata check --repair``, ``--repair`` rebuilds the store from
the doc store, and searches work again. Also: ``check`` beside a process that
holds the data dir, and ``serve`` on a damaged BM25 index.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.cli import check_cmd  # noqa: F401 - registers `check`
from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.store.types import StoreError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample file ingested, memory closed (every store flushed, the lock released)."""
    data = tmp_path_factory.mktemp("damage") / "data"
    memory = Memory.open(Settings(data_dir=data))
    try:
        memory.ingest(read_file(SAMPLE).sessions)
    finally:
        memory.close()
    return data


@pytest.fixture
def data(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(pristine, copy)
    return copy


def _check(data: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["check", *args, "--data-dir", str(data)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def _vector_chunks(data: Path) -> list[Path]:
    """The files Qdrant Edge keeps the vectors of its (mutable) segments in."""
    found = sorted((data / "vectors" / "segments").glob("*/vector_storage/vectors/chunk_*.mmap"))
    assert found, "the sample's vectors live in a mutable segment's chunk file"
    return found


def _segment_file(index: Path, ext: str) -> Path:
    found = sorted(index.glob(f"*.{ext}"))
    assert found, f"no .{ext} segment file in {index}"
    return found[0]


def _overwrite(path: Path, at: int, data: bytes) -> None:
    with path.open("r+b") as f:
        f.seek(at)
        f.write(data)


def _searches_work(data: Path) -> None:
    """Dense, BM25 and whole-session search each find the trip session again."""
    memory = Memory.open(Settings(data_dir=data), read_only=True)
    try:
        query = "trip to Lisbon with my sister"
        dense = memory.vectors.search(MAYA, memory.embedder.embed_query(query), 5)
        assert dense and dense[0].session_id == "2024-03-02-trip", dense
        lexical = memory.lexical.search(MAYA, "half marathon knee", 5)
        assert lexical and lexical[0].session_id == "2024-04-10-running", lexical
        assert memory.session_lexical is not None
        assert memory.session_lexical.search(MAYA, "Sardinha cat", 5)[0].session_id == \
            "2024-05-20-after-trip"
        assert memory.search(MAYA, "Where did Maya plan her trip?")[0].session_id in {
            "2024-03-02-trip", "2024-05-20-after-trip"}
    finally:
        memory.close()


def _aside(data: Path, name: str) -> list[Path]:
    return sorted(data.glob(f"{name}.damaged-*"))


def test_a_sound_data_dir_reads_every_store(data: Path):
    code, out = _check(data)
    assert code == 0, out
    for step in ("sqlite integrity_check", "BM25 index files", "vector store",
                 "vector sample against fresh encodings", "per-session counts and digests"):
        assert f"checked: {step}" in out, out


def test_a_truncated_vector_file_is_found_and_rebuilt(data: Path):
    for chunk in _vector_chunks(data):
        os.truncate(chunk, 1024)
    # What a user saw: the store opens, every dense search fails.
    memory = Memory.open(Settings(data_dir=data), read_only=True)
    try:
        with pytest.raises(StoreError, match="not readable"):
            memory.vectors.search(MAYA, memory.embedder.embed_query("Lisbon"), 5)
    finally:
        memory.close()
    code, out = _check(data)
    assert code == 1, out
    assert "the vector store is damaged" in out and "not readable" in out
    assert "memstrata check --repair" in out
    code, out = _check(data, "--repair")
    assert code == 0, out
    assert "rebuilt the vector store" in out
    assert len(_aside(data, "vectors")) == 1  # kept for inspection, not deleted
    assert _check(data)[0] == 0
    _searches_work(data)


def test_serve_start_logs_a_damaged_vector_store_with_the_repair(
        data: Path, caplog: pytest.LogCaptureFixture):
    """The data check `memstrata serve` runs on start reads the vectors too."""
    from query_service.server import _startup_totals

    for chunk in _vector_chunks(data):
        os.truncate(chunk, 1024)
    memory = Memory.open(Settings(data_dir=data), read_only=True)
    try:
        with caplog.at_level(logging.WARNING, logger="query_service.server"):
            _startup_totals(memory)
    finally:
        memory.close()
    logged = [r.getMessage() for r in caplog.records]
    assert any("vector store is damaged" in m and "memstrata check --repair" in m
               for m in logged), logged


def test_vectors_overwritten_with_other_vectors_are_found_by_fresh_encodings(data: Path):
    """Valid-looking unit vectors in the wrong places: only the encoder can tell."""
    chunk = _vector_chunks(data)[0]
    row = 384 * 4
    raw = chunk.read_bytes()[: 11 * row]
    _overwrite(chunk, 0, raw[row:] + raw[:row])  # every vector moved to its neighbour's point
    code, out = _check(data)
    assert code == 1, out
    assert "differ from a fresh encoding of their L0 unit" in out
    assert _check(data, "--repair")[0] == 0
    _searches_work(data)


def test_a_vector_store_that_cannot_be_opened_is_moved_aside_and_rebuilt(data: Path):
    segment = next((data / "vectors" / "segments").iterdir())
    (segment / "segment.json").write_text('{"vers')
    code, out = _check(data)
    assert code == 1, out
    assert "the vector store cannot be opened" in out and "memstrata check --repair" in out
    assert "not checked" in out  # the per-session checks need every store open
    code, out = _check(data, "--repair")
    assert code == 0, out
    assert len(_aside(data, "vectors")) == 1
    _searches_work(data)


def test_a_truncated_bm25_segment_is_found_and_rebuilt(data: Path):
    term = _segment_file(data / "lexical", "term")
    os.truncate(term, term.stat().st_size // 2)
    code, out = _check(data)
    assert code == 1, out  # it was 2 ("cannot open memory"), with no hint
    assert f"{term.name}: no valid footer" in out and "the BM25 index is damaged" in out
    assert "memstrata check --repair" in out
    code, out = _check(data, "--repair")
    assert code == 0, out
    assert "rebuilt the BM25 index" in out and len(_aside(data, "lexical")) == 1
    _searches_work(data)


def test_garbage_inside_a_bm25_segment_fails_its_checksum(data: Path):
    """Overwritten in the middle, the index still opens (and answers from bad bytes)."""
    store = _segment_file(data / "session-lexical", "store")
    _overwrite(store, store.stat().st_size // 3, os.urandom(48))
    code, out = _check(data)
    assert code == 1, out
    assert f"{store.name}: checksum mismatch" in out
    assert "the whole-session BM25 index is damaged" in out
    code, out = _check(data, "--repair")
    assert code == 0, out
    assert len(_aside(data, "session-lexical")) == 1 and not _aside(data, "lexical")
    _searches_work(data)


def test_serve_refuses_a_damaged_bm25_index_naming_the_repair(data: Path):
    term = _segment_file(data / "lexical", "term")
    os.truncate(term, 100)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    served = subprocess.run(
        [sys.executable, "-m", "memstrata", "serve", "--port", "0", "--no-stream",
         "--data-dir", str(data)], capture_output=True, text=True, env=env, timeout=120,
        cwd=ROOT)
    assert served.returncode == 2, served.stdout + served.stderr
    assert "refusing to serve" in served.stderr and term.name in served.stderr
    assert "memstrata check --repair" in served.stderr


def test_a_damaged_doc_store_is_named_with_the_restore_step_and_left_alone(data: Path):
    docs = data / "docs.sqlite3"
    _overwrite(docs, docs.stat().st_size // 2, os.urandom(4096))
    code, out = _check(data, "--repair")
    assert code == 1, out
    assert "SQLite reports damage" in out and "restore the file from a backup" in out
    assert "cannot be rebuilt from the other stores" in out
    assert not list(data.glob("*.damaged-*"))  # nothing moved aside or rebuilt


_HOLDER = """
import sys
from memstrata.config import Settings
from memstrata.memory import Memory
memory = Memory.open(Settings(data_dir=sys.argv[1]))
print("ready", flush=True)
sys.stdin.read()
memory.close()
"""


@contextmanager
def _held(data: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process with the data dir open for writing, as `memstrata serve` has it."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(data)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)


def test_check_beside_a_holder_reads_what_it_can_and_says_what_it_skipped(data: Path):
    with _held(data) as holder:
        code, out = _check(data)
        assert code == 0, out  # it was 3 (data dir in use)
        assert "checked: sqlite integrity_check" in out and "checked: BM25 index files" in out
        assert "not checked" in out and f"process {holder.pid}" in out
        assert "part(s) not checked" in out
        code, out = _check(data, "--repair")
        assert code == 3, out
        assert "refusing to repair" in out and f"process {holder.pid}" in out


def test_check_beside_a_holder_still_finds_a_damaged_bm25_segment(data: Path):
    store = _segment_file(data / "lexical", "store")
    _overwrite(store, store.stat().st_size // 3, os.urandom(48))  # it still opens
    with _held(data):
        code, out = _check(data)
        assert code == 1, out
        assert f"{store.name}: checksum mismatch" in out and "not checked" in out
