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
from typing import TYPE_CHECKING, Any

from memstrata.model import L0Unit
from memstrata.roles import HostedMemory

if TYPE_CHECKING:
    from memstrata.store.types import SessionTally

__all__ = ["move_aside", "probe_stores", "rebuild_stores", "reindex", "store_paths"]

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


def move_aside(path: Path) -> Path | None:
    """Rename ``path`` to ``<name>.damaged-<time>`` beside it; None if it does not exist."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
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
