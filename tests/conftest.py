"""Fixtures shared by the whole suite.

The MiniLM encoder takes a second or two to load, so every test that needs a
real encoder shares one instance (it is thread-safe and stateless once loaded).
"""

from __future__ import annotations

import pytest

from memstrata.embed.minilm import MiniLMEmbedder
from tests.support import early


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start mypy, and the processes of modules that define ``EARLY_START``, in the
    background when their tests are selected (see tests/support/early.py)."""
    if session.config.getoption("collectonly"):
        return
    if any(item.nodeid == early.MYPY_TEST for item in session.items):
        early.start_mypy()
    modules = {}
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "EARLY_START"):
            modules[module.__name__] = module
    for name, module in modules.items():
        early.launch(name, module.EARLY_START)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    early.stop_all()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()
