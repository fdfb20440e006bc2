"""What the CLI says when another process holds the embedded data dir.

Embedded stores admit one process per data dir (:mod:`memstrata.store.lock`).
Tantivy and SQLite can be read beside a writer, but Qdrant Edge locks its
files even to read, so with the default stores a read-only command waits too.
The message names the data dir, the holder, why, and what to do instead of a
backend's lock error. Every command exits with the same status for it
(:attr:`memstrata.cli.exits.Exit.LOCKED`, 3), ``serve`` and ``up`` included.
"""

from __future__ import annotations

from typing import NoReturn

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


def exit_locked(exc: DataDirLocked, *, read_only: bool = False) -> NoReturn:
    """Print :func:`locked_message` on stderr and exit with the data-dir-in-use status."""
    import typer
    from rich.markup import escape

    from memstrata.cli import err
    from memstrata.cli.exits import Exit

    err.print(f"[red]{escape(locked_message(exc, read_only=read_only))}[/red]", soft_wrap=True)
    raise typer.Exit(Exit.LOCKED) from None
