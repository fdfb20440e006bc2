"""The stores' own verify hooks on small real stores: what each kind of damage reads as."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from memstrata.model import Scope
from memstrata.rebuild import move_aside
from memstrata.store.qdrant_edge import QdrantEdgeVectorStore, vector_problems
from memstrata.store.tantivy_store import TantivyLexicalStore, verify_index_files
from memstrata.store.types import LexicalDoc, VectorRecord

SCOPE = Scope(tenant_id="t", user_id="u")


def _unit(dim: int, i: int) -> list[float]:
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    return v.tolist()


def test_vector_problems_name_each_kind_of_bad_vector():
    good = _unit(4, 0)
    found = vector_problems([good, {}, [1.0, 0.0], [float("nan"), 0, 0, 0], [0.0] * 4,
                             {"": good}], 4)
    assert found == [None, "no vector", "2 dimensions instead of 4", "NaN or infinity",
                     "length 0 instead of 1", None]


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "lexical"
    store = TantivyLexicalStore(path)
    store.upsert([LexicalDoc(id=f"u{i}", scope=SCOPE, session_id=f"s{i % 3}", turn_index=i,
                             text=f"note number {i} about lisbon") for i in range(30)])
    store.delete(SCOPE, "s1")  # a deletes file too
    store.close()
    return path


def test_a_sound_index_with_deletes_passes(index: Path):
    assert any(p.suffix == ".del" for p in index.iterdir())
    assert verify_index_files(index) == []
    assert verify_index_files(index.parent / "absent") == []


@pytest.mark.parametrize(("ext", "damage", "expected"), [
    ("term", "truncate", "no valid footer (cut short or overwritten)"),
    ("idx", "overwrite", "checksum mismatch (its content changed)"),
    ("store", "remove", "missing"),
])
def test_each_damaged_segment_file_is_named(index: Path, ext: str, damage: str,
                                            expected: str):
    path = next(index.glob(f"*.{ext}"))
    if damage == "truncate":
        os.truncate(path, path.stat().st_size // 2)
    elif damage == "overwrite":
        at = path.stat().st_size // 4
        with path.open("r+b") as f:
            f.seek(at)
            flipped = bytes(b ^ 0xFF for b in f.read(8))
            f.seek(at)
            f.write(flipped)
    else:
        path.unlink()
    assert verify_index_files(index) == [f"{path.name}: {expected}"]
    # The footers alone (no byte read twice) still see a cut or a loss, not an overwrite.
    assert bool(verify_index_files(index, checksum=False)) == (damage != "overwrite")


def test_a_lost_or_unreadable_meta_json_is_named(index: Path):
    meta = index / "meta.json"
    text = meta.read_text()
    meta.write_text(text[: len(text) // 2])
    assert verify_index_files(index)[0].startswith("meta.json: cannot be read")
    meta.unlink()
    assert verify_index_files(index) == ["meta.json: missing (the index would open empty)"]


def test_an_index_that_will_not_open_says_how_to_rebuild_it(index: Path):
    os.truncate(next(index.glob("*.term")), 10)
    with pytest.raises(Exception, match="memstrata check --repair"):
        TantivyLexicalStore(index, read_only=True)


def test_a_qdrant_edge_shard_cut_short_fails_verify(tmp_path: Path):
    path = tmp_path / "vectors"
    store = QdrantEdgeVectorStore(path, 8, optimize_on_flush=False)
    store.upsert([VectorRecord(id=f"00000000-0000-0000-0000-00000000000{i}", scope=SCOPE,
                               session_id="s", turn_index=i, vector=np.asarray(_unit(8, i)))
                  for i in range(1, 6)])
    assert store.verify() == []
    assert set(store.read_vectors(["00000000-0000-0000-0000-000000000002"])) == {
        "00000000-0000-0000-0000-000000000002"}
    store.close()
    chunks = list(path.glob("segments/*/vector_storage/vectors/chunk_*.mmap"))
    assert chunks
    for chunk in chunks:
        os.truncate(chunk, 16)
    reopened = QdrantEdgeVectorStore(path, 8, read_only=True)
    try:
        problems = reopened.verify()
    finally:
        reopened.close()
    assert problems and any("not readable" in p or "out of bounds" in p for p in problems)
    config = json.loads((path / "edge_config.json").read_text())
    assert config["vectors"][""]["size"] == 8  # the shard itself is fine: only its vectors


def test_move_aside_keeps_every_damaged_copy(tmp_path: Path):
    first = tmp_path / "vectors"
    first.mkdir()
    a = move_aside(first)
    first.mkdir()
    b = move_aside(first)
    assert a is not None and b is not None and a != b and a.exists() and b.exists()
    assert not first.exists() and move_aside(first) is None
