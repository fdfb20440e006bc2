"""A consistent snapshot of an embedded data dir, and its restore into an empty one.

What a snapshot holds, each copied the way its engine allows:

* the doc store (``docs.sqlite3``: sessions, raw turns, L0 units, cached layers
  and the index fingerprint) through SQLite's online backup API, which copies
  one consistent state of the database even while another connection writes,
  then checked (``quick_check``) and left as one self-contained file;
* the BM25 indexes (tantivy) as the segment files that their ``meta.json``
  lists, that ``meta.json`` last: segment files never change once written, so
  a merge that lands meanwhile only means reading the newer list again;
* the vector store (Qdrant Edge, which has no snapshot call of its own in the
  embedded engine) as its files, copied while nothing writes to it;
* the keys file and the spend ledger when the data dir holds them.

"Nothing writes" is the caller's part (:func:`hold_writes`): the data dir's
lock when no process holds it, else a write pause of the ``memstrata serve``
that does (:mod:`memstrata.lifecycle.pause`), so the stores agree with each
other at one instant. A ``manifest.json`` written last records when, how,
the counts and every file's size and SHA-256; a folder without it is not a
backup. :func:`restore` verifies every checksum while copying into a staging
folder beside the target and moves it into place only when all match.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstrata.config import Settings
from memstrata.roles import DataDirLocked
from memstrata.store.factory import embedded_backends
from memstrata.store.lock import DataDirLock, make_private
from memstrata.store.sqlite_docs import SqliteDocStore

__all__ = ["MANIFEST", "BackupError", "Snapshot", "backup", "hold_writes", "restore"]

MANIFEST = "manifest.json"
BACKUP_FORMAT = "memstrata-backup"
BACKUP_VERSION = 1
#: Files of the data dir a backup keeps besides the stores, when present.
EXTRA_FILES = ("service-keys.json", "service/spend.json")
_CHUNK = 1 << 20
#: Zero blocks of this size are left as holes in a copy.
_BLOCK = 1 << 14
#: How often a BM25 index is read again when merges keep replacing its segments.
_TANTIVY_ATTEMPTS = 10


class BackupError(RuntimeError):
    """A backup or a restore cannot be done; the message says why and what to do."""


@dataclass
class Snapshot:
    """How the stores were kept still while they were copied."""

    how: str
    #: Seconds writes were held (0.0 when the data dir's lock kept every writer out).
    paused_s: float = 0.0


def require_embedded(settings: Settings) -> None:
    """Backups copy an embedded data dir; server backends have their own snapshots."""
    chosen = {"vectors": settings.vector_backend, "BM25": settings.lexical_backend,
              "docs": settings.doc_backend}
    servers = [f"{k}={v}" for k, v in chosen.items() if v not in embedded_backends(settings)]
    if servers:
        raise BackupError(
            f"memstrata backup copies an embedded data dir, and these stores are servers "
            f"({', '.join(servers)}): back them up with their own snapshots (OpenSearch "
            f"snapshot repositories, Qdrant collection snapshots; see docs/lifecycle.md)")


def check_empty_target(path: Path, what: str) -> None:
    """``path`` must not exist, or be an empty folder."""
    if not path.exists():
        return
    if not path.is_dir():
        raise BackupError(f"{what} {path} is a file: give a new or empty folder")
    entries = sorted(p.name for p in path.iterdir())
    if entries:
        shown = ", ".join(entries[:5]) + (f" ... ({len(entries)} entries)"
                                          if len(entries) > 5 else "")
        raise BackupError(f"{what} {path} is not empty (it holds {shown}): give a new or "
                          f"empty folder; nothing was written")


@contextlib.contextmanager
def hold_writes(data_dir: Path, max_pause_s: float) -> Iterator[Snapshot]:
    """Keep every writer of ``data_dir`` still while the block copies its stores.

    No process holds the data dir: its lock is taken (writers wait or are refused).
    ``memstrata serve`` holds it: its writes are paused through its pause socket.
    Another holder (an ``ingest``, a stream worker): :class:`DataDirLocked`.
    """
    from memstrata.lifecycle.pause import PauseUnavailable, pause_writes

    lock = DataDirLock(data_dir, purpose="backup")
    try:
        lock.acquire()
    except DataDirLocked as held:
        try:
            with pause_writes(data_dir, max_pause_s) as answer:
                snapshot = Snapshot(f"writes of memstrata serve (pid {answer['pid']}) paused")
                started = time.monotonic()
                try:
                    yield snapshot
                finally:
                    snapshot.paused_s = time.monotonic() - started
        except PauseUnavailable:
            raise held from None
        return
    try:
        yield Snapshot("data dir locked: no other writer")
    finally:
        lock.release()


def _copy_file(src: Path, dst: Path) -> dict[str, Any]:
    """Copy ``src`` to ``dst`` (0600, synced); its size and SHA-256 as copied.

    Runs of zeros become holes: Qdrant Edge preallocates its files (32 MiB each
    for a handful of points), and a copy that wrote them out would be hundreds
    of times the data dir's real size.
    """
    digest = hashlib.sha256()
    size = 0
    dst.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with src.open("rb") as fin:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fout:
            while chunk := fin.read(_CHUNK):
                digest.update(chunk)
                view = memoryview(chunk)
                for at in range(0, len(chunk), _BLOCK):
                    block = view[at:at + _BLOCK]
                    if chunk.count(0, at, at + _BLOCK) == len(block):
                        fout.seek(len(block), os.SEEK_CUR)
                    else:
                        fout.write(block)
                size += len(chunk)
            fout.truncate(size)
            fout.flush()
            os.fsync(fout.fileno())
    return {"size": size, "sha256": digest.hexdigest()}


def _hash_file(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return {"size": size, "sha256": digest.hexdigest()}


def _copy_sqlite(src: Path, dst: Path) -> dict[str, Any]:
    """SQLite's online backup of ``src`` into ``dst``: one consistent state, one file."""
    dst.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.close(fd)
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30.0)
    target = sqlite3.connect(str(dst), isolation_level=None)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")  # a single file, no -wal beside it
        verdict = target.execute("PRAGMA quick_check").fetchone()[0]
    finally:
        target.close()
        source.close()
    if verdict != "ok":
        raise BackupError(f"the copy of {src} fails SQLite's quick_check ({verdict}): run "
                          f"`memstrata check` on the data dir first")
    return _hash_file(dst)


def _copy_tree(src: Path, dst: Path, root: Path) -> dict[str, dict[str, Any]]:
    """Every file under ``src`` (a store nothing writes to now), keyed by path under ``root``."""
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in src.rglob("*") if p.is_file() and not p.is_symlink()):
        if path.name.endswith(".lock"):
            continue  # a lock file is the holder's, never data
        target = dst / path.relative_to(src)
        files[target.relative_to(root).as_posix()] = _copy_file(path, target)
    return files


def _copy_tantivy(src: Path, dst: Path, root: Path) -> dict[str, dict[str, Any]]:
    """The segment files ``meta.json`` lists, then that ``meta.json`` (one committed state)."""
    for _ in range(_TANTIVY_ATTEMPTS):
        text = (src / "meta.json").read_text()
        segments = {str(s["segment_id"]).replace("-", "") for s in json.loads(text)["segments"]}
        names = sorted(p.name for p in src.iterdir()
                       if p.is_file() and p.name.split(".", 1)[0] in segments)
        if dst.exists():
            shutil.rmtree(dst)
        files: dict[str, dict[str, Any]] = {}
        try:
            for name in names:
                files[(dst / name).relative_to(root).as_posix()] = _copy_file(src / name,
                                                                             dst / name)
        except FileNotFoundError:  # a merge replaced those segments meanwhile: read again
            continue
        (dst / "meta.json").write_text(text)
        (dst / ".managed.json").write_text(json.dumps([*names, "meta.json"]))
        for name in ("meta.json", ".managed.json"):
            os.chmod(dst / name, 0o600)
            files[(dst / name).relative_to(root).as_posix()] = _hash_file(dst / name)
        return files
    raise BackupError(f"the BM25 index at {src} kept changing while it was copied")


def _counts(docs_file: Path) -> dict[str, Any]:
    store = SqliteDocStore(docs_file, read_only=True)
    try:
        stats = store.stats()
    finally:
        store.close()
    layers = stats.pop("layers", {})
    return {**stats, "cached_layers": {k: v for k, v in layers.items() if k in ("L1", "L2")}}


def backup(settings: Settings, dest: Path, snapshot: Snapshot) -> dict[str, Any]:
    """Copy the data dir's stores into ``dest`` (new or empty); returns the manifest.

    Call it inside :func:`hold_writes`. ``dest`` is removed again if the copy fails.
    """
    from memstrata import __version__

    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    started = time.monotonic()
    try:
        files: dict[str, dict[str, Any]] = {}
        docs = dest / settings.docs_path.name
        files[docs.name] = _copy_sqlite(settings.docs_path, docs)
        for store_dir in (settings.lexical_dir, settings.session_lexical_dir):
            if (store_dir / "meta.json").is_file():
                files |= _copy_tantivy(store_dir, dest / store_dir.name, dest)
        if settings.vector_dir.is_dir():
            files |= _copy_tree(settings.vector_dir, dest / settings.vector_dir.name, dest)
        for name in EXTRA_FILES:
            if (settings.data_dir / name).is_file():
                files[name] = _copy_file(settings.data_dir / name, dest / name)
        manifest = {
            "format": BACKUP_FORMAT, "version": BACKUP_VERSION,
            "created_at": datetime.now(UTC).isoformat(), "memstrata": __version__,
            "source": str(settings.data_dir), "consistency": snapshot.how,
            "copy_s": round(time.monotonic() - started, 3),
            "counts": _counts(docs), "files": files}
    except BaseException:
        _remove(dest, keep_folder=not created)
        raise
    return manifest


def write_manifest(dest: Path, manifest: dict[str, Any]) -> None:
    """The manifest, last and atomically: its presence marks a complete backup."""
    tmp = dest / f".{MANIFEST}.partial"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(dest / MANIFEST)


def _remove(path: Path, *, keep_folder: bool) -> None:
    if not path.exists():
        return
    if keep_folder:
        for child in path.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    else:
        shutil.rmtree(path)


def read_manifest(src: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{src} holds no {MANIFEST}: not a memstrata backup, or one that "
                          f"did not finish (a backup writes its manifest last)") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"{src / MANIFEST}: cannot be read ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise BackupError(f"{src / MANIFEST}: not a memstrata backup manifest")
    if manifest.get("version") != BACKUP_VERSION:
        raise BackupError(f"{src / MANIFEST}: backup version {manifest.get('version')!r}; "
                          f"this memstrata restores version {BACKUP_VERSION}")
    return manifest


def restore(src: Path, data_dir: Path) -> dict[str, Any]:
    """Copy the backup at ``src`` into ``data_dir`` (new or empty), every checksum verified.

    Files are copied into a staging folder beside ``data_dir`` and moved into
    place once all match the manifest; a mismatch leaves ``data_dir`` as it was.
    """
    manifest = read_manifest(src)
    check_empty_target(data_dir, "the data dir")
    files = manifest.get("files") or {}
    for rel in files:
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise BackupError(f"{src / MANIFEST}: file {rel!r} lies outside the backup")
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = data_dir.parent / f".{data_dir.name}.restoring-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    make_private(staging)
    try:
        for rel, want in sorted(files.items()):
            source = src / rel
            if not source.is_file():
                raise BackupError(f"{source}: missing from the backup (the manifest lists it)")
            got = _copy_file(source, staging / rel)
            if got != {"size": want.get("size"), "sha256": want.get("sha256")}:
                raise BackupError(f"{source}: differs from the manifest (size {got['size']} "
                                  f"vs {want.get('size')}, SHA-256 mismatch): the backup is "
                                  f"damaged; nothing was restored")
        if data_dir.exists():
            data_dir.rmdir()  # checked empty above
        staging.replace(data_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest
