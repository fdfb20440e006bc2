"""What the CLI says when another process holds the embedded data dir.

Embedded stores admit one process per data dir (:mod:`memstrata.store.lock`).
Tantivy and SQLite can be read beside a writer, but Qdrant Edge locks its
files even to read, so with the default stores a read-only command waits too.
The message names the data dir, the holder, why, and what to do instead of a
backend's lock error.
"""

from __future__ import annotations

from memstrata.roles import DataDirLocked


def locked_message(exc: DataDirLocked, *, read_only: bool) -> str:
    """The data dir, who holds it, why this command cannot run beside it, and what to do."""
    if exc.pid:
        holder = f"process {exc.pid}" + (f" on {exc.host}" if exc.host else "")
        if exc.command:
            holder += f" ({exc.command})"
        stop = f"wait for it to finish (or stop process {exc.pid}), then run this command again"
    else:
        holder = "another process"
        stop = "wait for it to finish (or stop it), then run this command again"
    if read_only:
        why = ("this command only reads, but the embedded vector store (Qdrant Edge) is locked "
               "even for reading while another process has it open")
        servers = ("to read while an ingest runs, use a Qdrant server "
                   "(MEMSTRATA_VECTOR_BACKEND=qdrant, MEMSTRATA_QDRANT_URL)")
    else:
        why = "embedded stores admit one process at a time"
        servers = ("for several processes on one memory, use the server backends "
                   "(MEMSTRATA_VECTOR_BACKEND=qdrant, MEMSTRATA_LEXICAL_BACKEND=opensearch, "
                   "MEMSTRATA_DOC_BACKEND=opensearch)")
    return (f"the data dir {exc.data_dir} is in use by {holder}: {why}.\n"
            f"What to do: {stop}; {servers}.")
