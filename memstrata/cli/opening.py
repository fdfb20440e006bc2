"""Opening memory for one CLI command, and saying plainly when another process holds it.

Embedded stores admit one writer per data dir. A command that only reads opens
read-only where the stores allow it, so ``search`` works while an ingest runs;
a command that writes (or a read the stores cannot serve alongside a writer)
gets a message naming the data dir, the holder and what to do instead of a
backend's lock error.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from memstrata.config import Settings
from memstrata.roles import DataDirLocked

if TYPE_CHECKING:
    from memstrata.memory import Memory

#: Commands that never write: they open read-only when the stores allow it.
READ_ONLY_COMMANDS = ("search", "sessions", "show", "ask")

# Until the core's lock file lands (issue 8), the embedded backends' own lock
# errors are the only sign of another writer; they are translated here.
_BACKEND_LOCK_SIGNS = ("LockBusy", "WouldBlock", "already locked",
                       "Resource temporarily unavailable")


def open_memory(settings: Settings, *, read_only: bool = False) -> "Memory":
    """Open memory for reading only, or for writing; raise :class:`DataDirLocked` when held."""
    from memstrata.memory import Memory

    try:
        if read_only and "read_only" in inspect.signature(Memory.open).parameters:
            return Memory.open(settings, read_only=True)  # type: ignore[call-arg]
        return Memory.open(settings)
    except DataDirLocked:
        raise
    except Exception as exc:
        if any(sign in str(exc) for sign in _BACKEND_LOCK_SIGNS):
            raise DataDirLocked(str(settings.data_dir), None, None, None) from exc
        raise


def locked_message(exc: DataDirLocked, *, read_only: bool) -> str:
    """What the user reads when the data dir is held: where, by whom, and what to do."""
    if exc.pid:
        holder = f"process {exc.pid}" + (f" on {exc.host}" if exc.host else "")
        if exc.command:
            holder += f" ({exc.command})"
        stop = f"wait for it to finish (or stop process {exc.pid})"
    else:
        holder = "another process"
        stop = "wait for it to finish (or stop it)"
    why = ("this command only reads, but the embedded stores cannot be read while that "
           "process writes them" if read_only else
           "embedded stores admit one writer per data dir")
    return (
        f"the data dir {exc.data_dir} is in use by {holder}: {why}.\n"
        f"What to do: {stop}, then run this command again; or point this command at another "
        f"data dir (--data-dir or MEMSTRATA_DATA_DIR); for several processes on one memory, "
        f"use the server backends (MEMSTRATA_VECTOR_BACKEND=qdrant, "
        f"MEMSTRATA_LEXICAL_BACKEND=opensearch, MEMSTRATA_DOC_BACKEND=opensearch)."
    )
