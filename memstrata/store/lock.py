"""One writer per embedded data dir.

Qdrant Edge, tantivy's IndexWriter and SQLite's writer all assume one process
owns their files; a second one gets raw ``WouldBlock`` / ``LockBusy`` errors
from deep inside the engine. So the process that opens the embedded stores
takes ``<data dir>/writer.lock`` first (an exclusive ``flock``, released by
the kernel if the process dies) and writes who it is into it: pid, host and
command. Anyone else who tries gets :class:`~memstrata.contract.DataDirLocked`
naming the data dir and that holder.

The data dir is private to its owner: the holder makes it 0700 and, while it
holds it, masks the group and other bits of the process umask (see
:class:`PrivateUmask`), so what the stores, the broker and the service create
in it (SQLite, tantivy and Qdrant Edge files, ``serve.json``, the broker's
files) is 0600 and its folders 0700, like the keys file.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import stat
import sys
import threading
import time
from pathlib import Path

from memstrata.contract import DataDirLocked

LOCK_NAME = "writer.lock"
#: Permission bits a data dir's files never grant: nothing to group or others.
PRIVATE_BITS = 0o077

log = logging.getLogger(__name__)


class PrivateUmask:
    """The process umask with :data:`PRIVATE_BITS` added while any data dir is held.

    The umask belongs to the whole process, and the engines create files long
    after they open (tantivy segments, Qdrant Edge segments, SQLite's WAL), so
    a umask set only around an open would miss them. It is set by the first
    holder and put back by the last, unless someone else changed it meanwhile.
    """

    _lock = threading.Lock()
    _holders = 0
    _saved: int | None = None
    _ours: int | None = None

    @classmethod
    def enter(cls) -> None:
        with cls._lock:
            if cls._holders == 0:
                saved = os.umask(PRIVATE_BITS)
                cls._saved, cls._ours = saved, saved | PRIVATE_BITS
                os.umask(cls._ours)
            cls._holders += 1

    @classmethod
    def leave(cls) -> None:
        with cls._lock:
            if cls._holders == 0:
                return
            cls._holders -= 1
            if cls._holders == 0 and cls._saved is not None:
                current = os.umask(cls._saved)
                if current != cls._ours:  # changed by someone else since: theirs stays
                    os.umask(current)
                cls._saved = cls._ours = None


def make_private(data_dir: Path) -> None:
    """Create ``data_dir`` 0700, or take group and other access off an existing one."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = stat.S_IMODE(data_dir.stat().st_mode)
    if mode & PRIVATE_BITS:
        try:
            os.chmod(data_dir, mode & ~PRIVATE_BITS)
        except PermissionError:  # e.g. a volume's root owned by root, shared by fsGroup
            # Group access given by the platform is its choice; access for others is not.
            log.log(logging.WARNING if mode & 0o007 else logging.INFO,
                    "data dir %s is not ours to chmod: its mode stays %o", data_dir, mode)


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
        make_private(self.data_dir)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
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
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) & PRIVATE_BITS:  # left by an older version
                os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        PrivateUmask.enter()
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
            PrivateUmask.leave()

    @property
    def held(self) -> bool:
        return self._fd is not None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists; one owned by another user counts as alive.

    ``pid`` <= 0 is never alive: ``kill(0, 0)`` would probe our own process group,
    so a record with no pid would otherwise look held.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holder(data_dir: Path) -> dict:
    """What the current holder wrote into the lock file (empty if unreadable)."""
    try:
        data = json.loads((Path(data_dir) / LOCK_NAME).read_text() or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
