"""The ``memstrata`` CLI, paused part way through a run until a signal comes.

``python -m tests.support.paused_cli ingest FILE`` is ``python -m memstrata ingest
FILE`` (the same CLI, stores and signal handling) with one difference: after the
first batch of sessions is committed, the ingest prepares a few more sessions
(left unfinished, as a real interrupt finds them) and then sleeps up to
``PAUSE_S`` before going on. With ``$PAUSED_CLI_BATCH_UNITS`` set it commits every
that many units instead of every 256 (the first commit comes sooner: a test needs
fewer sessions, each of them encoded, to interrupt a run between two commits).

``python -m tests.support.paused_cli produce FILE ...`` is ``memstrata produce``
that, after ``$PAUSED_CLI_SENDS`` messages were handed to the producer, waits up
to ``PAUSE_S`` before the next one (as its ``--rate`` sleeps between messages).

A test that interrupts the command once it sees the first commit (or enough
messages in the broker) so cannot lose the race to a fast encoder or a busy
machine: the SIGINT lands in the run, never after it finished. Without a signal
the command completes as usual, only later.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

#: How long the command waits for the signal.
PAUSE_S = 120.0
#: Sessions the ingest prepares after its first commit before it pauses: in progress.
IN_PROGRESS = 8


def _pause_ingest() -> None:
    from memstrata.memory import Memory

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
                print("paused_cli: waiting for a signal", file=sys.stderr, flush=True)
                time.sleep(PAUSE_S)  # a SIGINT raises KeyboardInterrupt here
        return pending

    Memory._commit = committing  # type: ignore[method-assign, assignment]
    Memory._prepare = preparing  # type: ignore[method-assign, assignment]
    if units := os.environ.get("PAUSED_CLI_BATCH_UNITS"):
        ingest = Memory.ingest

        def ingesting(self: Memory, sessions: Any, **kwargs: Any) -> Any:
            return ingest(self, sessions, **{**kwargs, "batch_units": int(units)})

        Memory.ingest = ingesting  # type: ignore[method-assign, assignment]


def _pause_produce(after: int) -> None:
    from streams.produce import StreamProducer

    send_turn = StreamProducer.send_turn
    state = {"sent": 0}

    async def sending(self: StreamProducer, ev: Any) -> Any:
        if state["sent"] == after:
            print("paused_cli: waiting for a signal", file=sys.stderr, flush=True)
            await asyncio.sleep(PAUSE_S)  # Ctrl-C cancels the run here
        state["sent"] += 1
        return await send_turn(self, ev)

    StreamProducer.send_turn = sending  # type: ignore[method-assign]


if __name__ == "__main__":
    from memstrata.cli import main

    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "ingest":
        _pause_ingest()
    elif command == "produce":
        _pause_produce(int(os.environ["PAUSED_CLI_SENDS"]))
    else:
        sys.exit(f"paused_cli: ingest or produce, not {command!r}")
    sys.argv[0] = "memstrata"
    main()
