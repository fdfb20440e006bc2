"""A second Ctrl-C on ``up`` prints no Faust ``AlreadyConfiguredWarning`` (issue 31).

Stopping without draining turns ``stream_wait_empty`` off, a setting Faust has read
since the streams started, and Faust warned about the change on every forced stop.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import faust

from streams.worker import StreamWorker


def test_stopping_without_draining_changes_the_setting_without_a_warning():
    app = faust.App("quiet-stop-test", broker="memory://", autodiscover=False)
    assert app.conf.stream_wait_empty  # read, as the running streams read it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        StreamWorker._no_wait_empty(SimpleNamespace(app=app))  # type: ignore[arg-type]
    assert app.conf.stream_wait_empty is False
    assert not [w for w in caught if "already used" in str(w.message)
                or type(w.message).__name__ == "AlreadyConfiguredWarning"], \
        [str(w.message) for w in caught]


def _stopped_worker(**state: object) -> StreamWorker:
    """A worker's stop state without a running app (only what ``summary`` reads)."""
    from prometheus_client import CollectorRegistry

    worker = StreamWorker.__new__(StreamWorker)
    worker.__dict__.update(
        began=0.0, drain_timeout_s=600.0, memory_only=True, left=None, drained=False,
        uncounted=False,
        stream_app=SimpleNamespace(metrics=SimpleNamespace(registry=CollectorRegistry()),
                                   kafka=SimpleNamespace(topic_turns="turns")))
    worker.__dict__.update(state)
    return worker


def test_a_hard_exit_before_the_count_never_says_nothing_was_left():
    # CI: the second signal's count did not finish within STOP_NOW_S, and the hard exit
    # read "nothing left unstored" while events were still arriving.
    assert "what was left unstored is not counted" in _stopped_worker().hard_exit_summary()
    assert "nothing left unstored" in _stopped_worker(drained=True).hard_exit_summary()
    counted = _stopped_worker(left={("turns", 0): 4, ("memstrata.control", 0): 0})
    assert "up to 4 turn events" in counted.hard_exit_summary()
