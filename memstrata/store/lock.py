"""One writer per embedded data dir.

Qdrant Edge, tantivy's IndexWriter and SQLite's writer all assume one process
owns their files; a second one gets raw ``WouldBlock`` / ``LockBusy`` errors
from deep inside the engine. So the process that opens the embedded stores
takes ``<data dir>/writer.lock`` first (an exclusive ``flock``, released by
the kernel if the process dies) and writes who it is into it: pid, host and
command. Anyone else who tries gets :class:`~memstrata.roles.DataDirLocked`
naming the data dir and that holder.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from memstrata.roles import DataDirLocked

LOCK_NAME = "writer.lock"


def current_command() -> str:
    """This process's command line, shortened for messages."""
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else ["python"]
    text = " ".join(argv)
    return text if len(text) <= 200 else text[:197] + "..."


class DataDirLock:
    """An exclusive lock on one data dir, held until :meth:`release`."""

    def __init__(self, data_dir: Path, *, purpose: str = "write") -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LOCK_NAME
        self.purpose = purpose
        self._fd: int | None = None

    def acquire(self) -> "DataDirLock":
        """Take the lock or raise :class:`DataDirLocked` naming the holder."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise self.holder_error() from None
        except BaseException:
            os.close(fd)
            raise
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": current_command(),
                "purpose": self.purpose, "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def holder_error(self) -> DataDirLocked:
        info = read_holder(self.data_dir)
        return DataDirLocked(str(self.data_dir), info.get("pid"), info.get("host"),
                             info.get("command"))

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing drops the flock

    @property
    def held(self) -> bool:
        return self._fd is not None


def read_holder(data_dir: Path) -> dict:
    """What the current holder wrote into the lock file (empty if unreadable)."""
    try:
        data = json.loads((Path(data_dir) / LOCK_NAME).read_text() or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
