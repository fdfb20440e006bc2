"""Rebuild a damaged embedded store (vectors, BM25) from the doc store.

The doc store holds every session's raw turns and the L0 units built from
them; the vector store and the BM25 indexes hold nothing else than what those
units (and the turns, for the whole-session index) give. So a vector file cut
short or a BM25 segment that fails its checksum is repaired without the
builder: the damaged directory is moved aside (kept for inspection, never
deleted), an empty store is created in its place, and every L0 unit is
indexed again: re-encoded for the vectors, re-analysed for BM25.

``memstrata check --repair`` calls :func:`rebuild_stores`; it needs the data
dir to itself (:class:`~memstrata.store.lock.DataDirLock`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstrata.model import L0Unit
from memstrata.roles import HostedMemory

if TYPE_CHECKING:
    from memstrata.store.types import SessionTally

__all__ = ["Migration", "move_aside", "plan_migration", "probe_stores", "rebuild_stores",
           "reencode", "reindex", "store_paths"]

#: Left in the data dir while a re-encode runs: a run cut short is redone by the next.
REENCODE_MARK = "reencode-pending.json"

#: Units embedded and written per batch while rebuilding.
_BATCH = 512


def store_paths(settings: Any) -> dict[str, Path]:
    """The embedded stores a rebuild can replace, by name (see ``check.STORE_LABELS``)."""
    paths: dict[str, Path] = {}
    if settings.vector_backend == "qdrant-edge":
        paths["vectors"] = Path(settings.vector_dir)
    if settings.lexical_backend == "tantivy":
        paths["lexical"] = Path(settings.lexical_dir)
        paths["session-lexical"] = Path(settings.session_lexical_dir)
    return paths


def move_aside(path: Path, why: str = "damaged") -> Path | None:
    """Rename ``path`` to ``<name>.<why>-<time>`` beside it; None if it does not exist."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{why}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{why}-{stamp}-{n}")
    path.rename(target)
    return target


def probe_stores(settings: Any) -> dict[str, str]:
    """Which embedded stores fail to open, with the error (the caller holds no lock).

    Used when :meth:`Memory.open` failed: it opens everything at once, so its
    error alone does not say which store to rebuild. Each store is opened
    read-only under the data dir's lock, then closed.
    """
    from memstrata.embed.factory import open_embedder
    from memstrata.store.factory import open_lexical_store, open_vector_store
    from memstrata.store.lock import DataDirLock

    failed: dict[str, str] = {}
    lock = DataDirLock(settings.data_dir, purpose="check").acquire()
    try:
        openers: dict[str, Callable[[], Any]] = {
            "lexical": lambda: open_lexical_store(settings, read_only=True),
            "session-lexical": lambda: open_lexical_store(settings, read_only=True,
                                                          sessions=True),
            "vectors": lambda: open_vector_store(settings, open_embedder(settings).dim,
                                                 read_only=True),
        }
        for name, path in store_paths(settings).items():
            if not path.exists():
                continue  # opened writable, an empty one is created
            try:
                openers[name]().close()
            except Exception as exc:  # noqa: BLE001 - the store's own error is the finding
                failed[name] = str(exc)
    finally:
        lock.release()
    return failed


def rebuild_stores(settings: Any, stores: Collection[str],
                   progress: Callable[[str, int, int], None] | None = None) -> Any:
    """Move the named stores aside, open memory with empty ones, index every L0 unit again.

    Returns the open (writable) :class:`~memstrata.memory.Memory`; the caller
    closes it. ``progress(store, done, total)`` follows each store's units.
    Raises :class:`~memstrata.roles.DataDirLocked` if another process holds
    the data dir.
    """
    from memstrata.memory import Memory
    from memstrata.store.lock import DataDirLock

    paths = store_paths(settings)
    unknown = [s for s in stores if s not in paths]
    if unknown:
        raise ValueError(f"cannot rebuild {', '.join(unknown)}: not an embedded store here "
                         f"(rebuildable: {', '.join(paths) or 'none'})")
    lock = DataDirLock(settings.data_dir, purpose="repair").acquire()
    try:
        for name in stores:
            move_aside(paths[name])
    finally:
        lock.release()  # Memory.open takes it again (a lock is one per open file)
    memory = Memory.open(settings)
    try:
        reindex(memory, stores, progress)
    except BaseException:
        memory.close()
        raise
    return memory


def _sessions(memory: HostedMemory) -> list[SessionTally]:
    return [t for t in memory.docs.session_tallies() if not t.scope.tenant_id.startswith("#")]


def _unit_batches(memory: HostedMemory,
                  tallies: list[SessionTally]) -> Iterator[list[L0Unit]]:
    batch: list[L0Unit] = []
    for t in tallies:
        if not t.units:
            continue
        batch.extend(memory.docs.session_units(t.scope, t.session_id))
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def reindex(memory: HostedMemory, stores: Collection[str],
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
    """Write every L0 unit (and session document) of the doc store into ``stores`` again.

    Returns how many records each store received. Upserts by id, so a store
    that already holds some of them ends with one record per unit either way.
    """
    from memstrata.memory import HELD_DIGEST
    from memstrata.retrieval import indexing
    from memstrata.retrieval.sessions import session_document
    from memstrata.store.types import LexicalDoc, VectorRecord

    tallies = _sessions(memory)
    total_units = sum(t.units for t in tallies)
    written: dict[str, int] = {}
    if "vectors" in stores or "lexical" in stores:
        done = 0
        for units in _unit_batches(memory, tallies):
            if "vectors" in stores:
                vectors = memory.embedder.embed_documents(
                    [indexing.dense_text(u) for u in units])
                memory.vectors.upsert([
                    VectorRecord(id=u.id, scope=u.scope, session_id=u.session_id,
                                 turn_index=u.turn_index, vector=v)
                    for u, v in zip(units, vectors)])
            if "lexical" in stores:
                memory.lexical.upsert([
                    LexicalDoc(id=u.id, scope=u.scope, session_id=u.session_id,
                               turn_index=u.turn_index, text=u.summary,
                               keywords=indexing.lexical_keywords(u))
                    for u in units])
            done += len(units)
            for name in ("vectors", "lexical"):
                if name in stores and progress is not None:
                    progress(name, done, total_units)
        for name in ("vectors", "lexical"):
            if name in stores:
                written[name] = done
    if "session-lexical" in stores and memory.session_lexical is not None:
        # As an ingest does: a session whose last window is held has no document yet.
        open_ = [t for t in tallies if t.turns and t.digest != HELD_DIGEST]
        docs = []
        for n, t in enumerate(open_, 1):
            meta = memory.docs.get_session(t.scope, t.session_id)
            if meta is not None:
                docs.append(session_document(meta, memory.docs.get_turns(t.scope, t.session_id)))
            if len(docs) >= _BATCH or n == len(open_):
                memory.session_lexical.upsert(docs)
                written["session-lexical"] = written.get("session-lexical", 0) + len(docs)
                docs = []
                if progress is not None:
                    progress("session-lexical", n, len(open_))
    memory.flush()
    return written


@dataclass(frozen=True)
class Migration:
    """What ``memstrata migrate`` does to a data dir: the encoder before and after."""

    stored: tuple[str, int] | None  # (embedder, dim) that wrote the vectors; None: new
    now: tuple[str, int]
    pending: bool  # a previous re-encode did not finish

    @property
    def needed(self) -> bool:
        return self.pending or (self.stored is not None and self.stored != self.now)

    def describe(self) -> str:
        if self.pending:
            return f"finish a re-encode cut short: every vector again with {self.now[0]} " \
                   f"(dim {self.now[1]})"
        if not self.needed:
            return f"nothing to migrate: the vectors are {self.now[0]} (dim {self.now[1]})"
        assert self.stored is not None
        return (f"re-encode every vector: {self.stored[0]} (dim {self.stored[1]}) -> "
                f"{self.now[0]} (dim {self.now[1]})")


def _fingerprint_record() -> tuple[Any, str, str, str]:
    """Where memory keeps the index fingerprint in the doc store (scope, session, kind, key)."""
    from memstrata.memory import _FINGERPRINT, _META_SCOPE, _META_SESSION

    return _META_SCOPE, _META_SESSION, _FINGERPRINT, "1"


def plan_migration(settings: Any) -> Migration:
    """Compare the encoder the settings choose with the one that wrote the vectors."""
    from memstrata.embed.factory import open_embedder
    from memstrata.memory import embedder_id
    from memstrata.store.factory import open_doc_store

    embedder = open_embedder(settings)
    now = (embedder_id(embedder), embedder.dim)
    stored = None
    if not (settings.doc_backend == "sqlite" and not Path(settings.docs_path).is_file()):
        docs = open_doc_store(settings, read_only=True)
        try:
            stored = docs.get_layer(*_fingerprint_record())
        finally:
            docs.close()
    before = None if stored is None else (str(stored.get("embedder")), int(stored.get("dim", 0)))
    return Migration(before, now, (Path(settings.data_dir) / REENCODE_MARK).exists())


def reencode(settings: Any, progress: Callable[[str, int, int], None] | None = None
             ) -> tuple[Migration, Any]:
    """Re-encode every L0 unit with the encoder the settings choose; returns the open memory.

    The index fingerprint refuses a data dir whose vectors another encoder wrote
    (:class:`~memstrata.fingerprint.IndexMismatch`). This is the way across: the
    old vectors are moved aside (embedded Qdrant Edge; a Qdrant server needs a new,
    empty ``MEMSTRATA_QDRANT_COLLECTION``), the fingerprint's encoder is set to the
    new one, and every unit of the doc store is embedded again. A mark file makes
    a run cut short (crash, Ctrl-C) redo the whole re-encode on the next run.
    """
    import json

    from memstrata.memory import Memory
    from memstrata.store.factory import embedded_backends, open_doc_store
    from memstrata.store.lock import DataDirLock

    plan = plan_migration(settings)
    mark = Path(settings.data_dir) / REENCODE_MARK
    if plan.needed:
        lock = (DataDirLock(settings.data_dir, purpose="migrate").acquire()
                if embedded_backends(settings) else None)
        try:
            mark.write_text(json.dumps({"from": plan.stored, "to": plan.now}), encoding="utf-8")
            vectors = store_paths(settings).get("vectors")
            if vectors is not None:
                move_aside(vectors, "before-migrate")
            docs = open_doc_store(settings)
            try:
                where = _fingerprint_record()
                stored = docs.get_layer(*where) or {}
                docs.put_layer(*where, {**stored, "embedder": plan.now[0], "dim": plan.now[1]})
            finally:
                docs.close()
        finally:
            if lock is not None:
                lock.release()  # Memory.open takes it again
    memory = Memory.open(settings)
    try:
        if plan.needed:
            reindex(memory, ["vectors"], progress)
            mark.unlink(missing_ok=True)
    except BaseException:
        memory.close()
        raise
    return plan, memory
