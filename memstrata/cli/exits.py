"""One exit status per kind of failure, the same for every command.

Scripts (and supervisors such as systemd or Kubernetes) branch on the status,
so a data dir held by another process must read the same from ``ingest`` as
from ``serve``. Typer's own usage errors already exit 2; the rest is ours.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["EXIT_CODES_HELP", "Exit"]


class Exit(IntEnum):
    """Exit statuses of ``memstrata`` (documented in ``--help`` and the README)."""

    OK = 0
    #: The command ran and failed: a store, broker or remote call error, a session not found.
    FAILED = 1
    #: Bad option, setting or input (unreadable file, wrong format); Typer's usage errors too.
    USAGE = 2
    #: The data dir is held by another process (embedded stores admit one at a time).
    LOCKED = 3
    #: A network address problem: the port to listen on is taken, or the broker or
    #: service to talk to cannot be reached.
    UNREACHABLE = 4
    #: Ctrl-C stopped a batch command (ingest, produce) before it finished, or a second
    #: Ctrl-C / SIGTERM stopped a service without waiting for it to drain.
    INTERRUPTED = 130


EXIT_CODES_HELP = (
    "Exit status: 0 ok; 1 failed while running (store, broker or remote error, not found); "
    "2 usage error or unreadable input; 3 data dir in use by another process; "
    "4 port taken or broker/service unreachable; 130 interrupted (Ctrl-C)."
)
