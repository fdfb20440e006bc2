"""Fixtures shared by the whole suite.

The MiniLM encoder takes a second or two to load, so every test that needs a
real encoder shares one instance (it is thread-safe and stateless once loaded).
"""

from __future__ import annotations

import signal

import pytest

from memstrata.embed.minilm import MiniLMEmbedder
from tests.support import early
from tests.support.bytecode import compile_packages


def pytest_sessionstart(session: pytest.Session) -> None:
    """Bytecode for the repository's packages, read by every subprocess the suite starts.

    Also: Ctrl-C reaches the commands the tests start. A suite launched in the
    background by a non-interactive shell (``nohup ... &``) inherits SIGINT
    ignored, and its children would too, so a Python child never gets
    KeyboardInterrupt and the Ctrl-C tests wait out their timeouts. A handler
    (unlike "ignored") is not inherited across exec: the children start with
    the default action and Python installs its own handler, as in a terminal.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    compile_packages()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start mypy in the background when its test is selected (see tests/support/early.py)."""
    if any(item.nodeid == early.MYPY_TEST for item in session.items) and \
            not session.config.getoption("collectonly"):
        early.start_mypy()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    early.stop_all()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()
