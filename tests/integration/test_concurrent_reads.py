"""Readers on 16 threads while a writer appends, checked against single-threaded runs.

Real embedded stack. The readers ask about one user while the writer grows
another user's session in the same stores; every concurrent result must equal
what a single thread gets before or after the writes (BM25 statistics are
index-wide, so the writes may legitimately move scores between the two).
Cached layers must be built once per key however many threads ask at once.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.memory import Memory
from tests.support.conversation import ASKED_ON, MAYA, open_memory
from tests.support.growing import ALICE, messages, meta

SESSIONS = ["s1-trip-plans", "s2-running", "s3-back-home", "s4-work"]
QUERIES = ["Which restaurant did my sister like?", "knee pain after running",
           "kitten name", "promotion at work"]
QUESTIONS = ["When did I start training for a half marathon?", "What is my cat called?"]


def operations(memory: Memory, controller: Controller, *, layers: bool) -> dict:
    """name -> zero-argument call returning a comparable result."""
    # Scores are left out: the other user's writes shift BM25 statistics a little
    # while they land (neither the before nor the after value); ranks and units are kept.
    ops = {f"search:{q}": (lambda q=q: [(h.session_id, [u.id for u in h.units])
                                        for h in memory.search(MAYA, q)]) for q in QUERIES}
    ops["sessions"] = lambda: [m.session_id for m in memory.sessions(MAYA)]
    for sid in SESSIONS:
        ops[f"raw:{sid}"] = lambda sid=sid: memory.raw(MAYA, sid)
        ops[f"l0:{sid}"] = lambda sid=sid: memory.l0(MAYA, sid)
        if layers:
            ops[f"facts:{sid}"] = lambda sid=sid: memory.facts(MAYA, sid).facts
            ops[f"notes:{sid}"] = lambda sid=sid: memory.notes(MAYA, sid).notes
    for q in QUESTIONS:
        ops[f"answer:{q}"] = lambda q=q: _answer(controller, q)
    return ops


def _answer(controller: Controller, question: str) -> tuple:
    """The answer, its sources and the trace's tools and layers.

    The sessions each step touched are left out, for the reason scores are left
    out of searches: while the other user's turns land, BM25 statistics shift,
    and two nearly tied low-ranked sessions may swap places in a step's list
    (seen with the integer encoder: the 3rd and 4th of four). What the reader
    is told, and from where, must still be the before or the after value.
    """
    a = controller.answer(MAYA, question, ASKED_ON)
    return (a.answer, a.abstained, [(s.session_id, s.turn_index) for s in a.sources],
            [(s.tool, s.layer) for s in a.steps])


def test_sixteen_readers_and_one_appender(tmp_path: Path, embedder):
    memory = open_memory(tmp_path, embedder)
    controller = Controller(memory, ControllerSettings(policy="rules"))
    try:
        # Before: everything but L1/L2, so the concurrent run does their first builds.
        before = {k: f() for k, f in operations(memory, controller, layers=False).items()}
        builds_before = memory.layers.builds
        ops = operations(memory, controller, layers=True)
        names = [n for n in ops for _ in range(3)]
        random.Random(5).shuffle(names)
        msgs = messages(20, seed=11)
        appended = threading.Event()
        errors: list[BaseException] = []

        def appender() -> None:
            try:
                for m in msgs:
                    memory.append_messages(meta("live"), [m])
                memory.close_session(ALICE, "live")
            except BaseException as exc:  # reported below
                errors.append(exc)
            finally:
                appended.set()

        writer = threading.Thread(target=appender)
        writer.start()
        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(lambda n: (n, ops[n]()), names))
        writer.join(timeout=120)
        assert appended.is_set() and not errors, errors
        after = {k: f() for k, f in ops.items()}
        for name, got in results:
            assert got == after[name] or got == before.get(name), name
        # Every L1/L2 key was built exactly once, however many threads asked at once.
        built = memory.layers.builds - builds_before
        assert built == sum(memory.stats("acme").cached_layers.values()) - builds_before
        assert memory.layers.in_flight == 0
        # And the writer's session came out whole.
        assert sum(len(t.messages) for t in memory.raw(ALICE, "live")) == len(msgs)
        assert len(memory.l0(ALICE, "live")) == len(memory.raw(ALICE, "live"))
    finally:
        memory.close()
