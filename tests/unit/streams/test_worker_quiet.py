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
