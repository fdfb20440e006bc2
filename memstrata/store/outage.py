"""What kind of store failure an exception is: a full disk, a store out of reach, or other.

Callers map the first two to "retry later" (UNAVAILABLE with a hint) rather than
to a fault of the request. Backends wrap their errors (``StoreError`` around
``sqlite3.OperationalError``, Rust errors as text), so the chain of causes and
the messages are both read.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from memstrata.store.types import StoreError

#: How each backend says that the disk is full (SQLite, Rust's io::Error, the C library).
_FULL_TEXTS = ("database or disk is full", "no space left on device", "os error 28",
               "disk quota exceeded", "os error 122", "storagefull")
#: And that a store cannot be reached or read now (not a fault of the data).
_DOWN_TEXTS = ("disk i/o error", "database is locked", "unable to open database",
               "connection refused", "connection reset", "timed out")


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < 16:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def store_failure(exc: BaseException) -> Literal["full", "down"] | None:
    """``full`` for a full disk or quota, ``down`` for a store out of reach, else None."""
    down = False
    for e in _chain(exc):
        if isinstance(e, OutOfSpace):
            return "full"
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        text = str(e).lower().replace(" ", "")
        if any(t.replace(" ", "") in text for t in _FULL_TEXTS):
            return "full"
        if isinstance(e, (ConnectionError, TimeoutError)) or (
                isinstance(e, sqlite3.OperationalError) and "locked" in text):
            down = True
        elif any(t.replace(" ", "") in text for t in _DOWN_TEXTS):
            down = True
    return "down" if down else None


class OutOfSpace(StoreError):
    """A write refused before it began: the data volume has less free space than the reserve."""


def check_free_space(path: Path, min_free_mb: int) -> None:
    """Raise :class:`OutOfSpace` when ``path``'s volume has less than ``min_free_mb`` free.

    (statvfs: a few microseconds.) A path that does not exist yet is not checked.
    """
    if min_free_mb <= 0:
        return
    try:
        st = os.statvfs(path)
    except OSError:
        return
    free_mb = st.f_bavail * st.f_frsize / 1e6
    if free_mb < min_free_mb:
        raise OutOfSpace(f"the data volume is full: {free_mb:.0f} MB free at {path}, under "
                         f"the {min_free_mb} MB reserve (MEMSTRATA_MIN_FREE_MB); writes are "
                         f"refused until space is freed (deletes still work)")
