"""Fixtures shared by the whole suite.

The MiniLM encoder takes a second or two to load, so every test that needs a
real encoder shares one instance (it is thread-safe and stateless once loaded).
"""

from __future__ import annotations

from types import ModuleType

import pytest

from memstrata.embed.minilm import MiniLMEmbedder
from tests.support import early


#: An early start is launched when the test module this many modules before its own
#: begins: early enough to be ready, late enough that starts do not pile up at once.
EARLY_LEAD_MODULES = 2
_early_at: dict[str, list[ModuleType]] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start mypy now, and plan the processes of modules that define ``EARLY_START``,
    when their tests are selected (see tests/support/early.py)."""
    _early_at.clear()
    if session.config.getoption("collectonly"):
        return
    if any(item.nodeid == early.MYPY_TEST for item in session.items):
        early.start_mypy()
    firsts: dict[str, pytest.Item] = {}  # each module's first item, in run order
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None:
            firsts.setdefault(module.__name__, item)
    order = list(firsts)
    for i, name in enumerate(order):
        module = getattr(firsts[name], "module", None)
        if hasattr(module, "EARLY_START"):
            trigger = firsts[order[max(0, i - EARLY_LEAD_MODULES)]].nodeid
            _early_at.setdefault(trigger, []).append(module)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for module in _early_at.pop(item.nodeid, []):
        early.launch(module.__name__, module.EARLY_START)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    early.stop_all()


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()
