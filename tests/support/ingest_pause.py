"""``memstrata`` whose ingest, once a batch is committed, waits a while for a Ctrl-C.

``python -m tests.support.ingest_pause ingest FILE`` is ``python -m memstrata ingest
FILE`` (the same CLI, stores and signal handling) with one difference: after the
first batch of sessions is committed, the ingest prepares a few more sessions
(left unfinished, as a real interrupt finds them) and then sleeps up to
``PAUSE_S`` before going on. A test that interrupts the ingest once it sees the
first commit cannot lose the race to a fast encoder or a busy machine: the
SIGINT lands in the ingest, never after it finished. Without the signal the
ingest completes as usual, only later.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from memstrata.memory import Memory

#: How long the ingest waits for the signal, after the first commit.
PAUSE_S = 120.0
#: Sessions prepared after the first commit before the pause: they are in progress.
IN_PROGRESS = 8


def _install() -> None:
    commit, prepare = Memory._commit, Memory._prepare
    state = {"committed": False, "prepared_since": 0, "paused": False}

    def committing(self: Memory, batch: Any, ingest: Any = None) -> Any:
        reports = commit(self, batch, ingest)
        state["committed"] = state["committed"] or bool(batch)
        return reports

    def preparing(self: Memory, *args: Any, **kwargs: Any) -> Any:
        pending = prepare(self, *args, **kwargs)
        if state["committed"] and not state["paused"]:
            state["prepared_since"] += 1
            if state["prepared_since"] >= IN_PROGRESS:
                state["paused"] = True
                print("ingest_pause: waiting for a signal", file=sys.stderr, flush=True)
                time.sleep(PAUSE_S)  # a SIGINT raises KeyboardInterrupt here
        return pending

    Memory._commit = committing  # type: ignore[method-assign]
    Memory._prepare = preparing  # type: ignore[method-assign]


if __name__ == "__main__":
    from memstrata.cli import main

    _install()
    sys.argv[0] = "memstrata"
    main()
