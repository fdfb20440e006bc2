"""``memstrata backup DEST`` and ``memstrata restore SRC``: an embedded data dir, snapshotted.

A backup may run while ``memstrata serve`` holds the data dir: it then asks
that process to hold its writes (flushed) for the copy, through the pause
socket serve offers (:mod:`memstrata.lifecycle.pause`); with no holder it
takes the data dir's lock. What is copied and how is
:mod:`memstrata.lifecycle.backup`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape

from memstrata.cli import DataDir, _settings, app, console, err
from memstrata.cli.exits import Exit


def _fail(message: str, code: Exit) -> NoReturn:
    err.print(f"[red]{escape(message)}[/red]", soft_wrap=True)
    raise typer.Exit(code)


def _size(manifest: dict[str, Any], folder: Path) -> str:
    """How many files, and the space they take (the stores' preallocated zeros are holes)."""
    files = manifest.get("files", {})
    used = sum((folder / rel).stat().st_blocks * 512 for rel in files
               if (folder / rel).is_file())
    return f"{len(files)} files, {used / 1e6:.1f} MB on disk"


def _counts(manifest: dict[str, Any]) -> str:
    c = manifest.get("counts", {})
    return (f"{c.get('users', 0)} users, {c.get('sessions', 0)} sessions, "
            f"{c.get('turns', 0)} turns, {c.get('units', 0)} L0 units")


@app.command("backup")
def backup_cmd(
    dest: Annotated[Path, typer.Argument(help="New or empty folder to write the backup to.")],
    data_dir: DataDir = None,
    max_pause: Annotated[float, typer.Option(
        "--max-pause", min=1.0, max=600.0,
        help="Beside a running serve: the longest its writes may be held (seconds).")
    ] = 120.0,
) -> None:
    """Copy an embedded data dir into DEST: a consistent snapshot with a manifest.

    Works while `memstrata serve` runs: serve holds its writes (flushed) while the
    stores are copied, then goes on. The doc store is copied with SQLite's online
    backup, the BM25 indexes as the segments their last commit lists, the vector store
    as its files; manifest.json (written last) records the time, the counts and each
    file's SHA-256. `memstrata restore DEST --data-dir NEW` brings it back.
    """
    from memstrata.cli.locked import locked_message
    from memstrata.lifecycle.backup import (
        BackupError,
        backup,
        check_empty_target,
        hold_writes,
        require_embedded,
        write_manifest,
    )
    from memstrata.lifecycle.pause import PauseExpired
    from memstrata.roles import DataDirLocked

    settings = _settings(data_dir)
    source = settings.data_dir
    try:
        require_embedded(settings)
        check_empty_target(dest, "the backup folder")
    except BackupError as exc:
        _fail(str(exc), Exit.USAGE)
    if not settings.docs_path.is_file():
        _fail(f"nothing to back up: no {settings.docs_path} (nothing ingested into {source} "
              f"yet?)", Exit.USAGE)
    if dest.resolve().is_relative_to(source.resolve()):
        _fail(f"the backup folder {dest} is inside the data dir {source}: give a folder "
              f"outside it", Exit.USAGE)
    created = not dest.exists()
    try:
        with hold_writes(source, max_pause) as snapshot:
            manifest = backup(settings, dest, snapshot)
    except DataDirLocked as exc:
        _fail(locked_message(exc, read_only=False) + " A backup runs beside `memstrata serve` "
              "(which pauses its writes for it) or when no process holds the data dir.",
              Exit.LOCKED)
    except PauseExpired as exc:
        _remove_partial(dest, created)
        _fail(f"{exc}; nothing was kept: run it again with a longer --max-pause", Exit.FAILED)
    except (BackupError, OSError) as exc:
        _remove_partial(dest, created)
        _fail(f"backup failed: {exc}", Exit.FAILED)
    manifest["paused_s"] = round(snapshot.paused_s, 3)
    write_manifest(dest, manifest)
    held = f"; writes held {snapshot.paused_s:.2f} s" if snapshot.paused_s else ""
    console.print(escape(f"backed up {source} into {dest}: {_counts(manifest)} "
                         f"({_size(manifest, dest)}); {snapshot.how}{held}"), soft_wrap=True,
                  highlight=False)


def _remove_partial(dest: Path, created: bool) -> None:
    import shutil

    if not dest.exists():
        return
    if created:
        shutil.rmtree(dest, ignore_errors=True)
    else:
        for child in dest.iterdir():
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()


@app.command("restore")
def restore_cmd(
    src: Annotated[Path, typer.Argument(help="A folder `memstrata backup` wrote.")],
    data_dir: DataDir = None,
) -> None:
    """Restore a backup into an empty (or new) data dir, every file's checksum verified.

    A data dir that holds anything is refused: restore never mixes a backup with other
    data. Then `memstrata check --data-dir DIR` verifies the stores agree.
    """
    from memstrata.lifecycle.backup import BackupError, check_empty_target, read_manifest, restore

    target = _settings(data_dir).data_dir
    try:
        read_manifest(src)
        check_empty_target(target, "the data dir")
    except BackupError as exc:
        _fail(f"{exc}", Exit.USAGE)
    try:
        manifest = restore(src, target)
    except (BackupError, OSError) as exc:
        _fail(f"restore failed: {exc}", Exit.FAILED)
    console.print(escape(f"restored the backup of {manifest.get('created_at')} into {target}: "
                         f"{_counts(manifest)} ({_size(manifest, target)}, every checksum "
                         f"verified); check it with `memstrata check --data-dir {target}`"),
                  soft_wrap=True, highlight=False)
