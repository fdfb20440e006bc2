"""Fixtures shared by the whole suite.

``hypothesis`` is imported here because its pytest plugin otherwise imports it
(and pytest rewrites, so parses, it) in the terminal summary, while a service
thread of the last tests may still be formatting a traceback: CPython 3.11's
traceback module parses source lines with ``ast``, and 3.11.7's AST state is
not thread-safe ("AST constructor recursion depth mismatch").

The MiniLM encoder takes a second or two to load, so every test that needs a
real encoder shares one instance (it is thread-safe and stateless once loaded).
"""

from __future__ import annotations

import os
import signal
from typing import Any

# Before anything imports grpc (it reads this once): the suite starts servers and CLI
# commands with ``preexec_fn`` (a plain fork) while its own gRPC clients run. With
# fork support on, gRPC's child handler restarted a poller in the forked child, which
# then closed every descriptor before exec: "Epoll1Poller ... epoll_wait error: Bad
# file descriptor" and SIGABRT, about once in 200 starts (an MCP server's, in one
# suite run). The CLI turns it off the same way (memstrata.cli._quiet_native_libraries).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import hypothesis  # noqa: F401 - imported now, not by its plugin's summary (see below)
import pytest

from memstrata.embed.minilm import MiniLMEmbedder
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
    # gRPC's asyncio layer shuts itself down when its last object is collected, joining
    # its poller thread; a collection on another thread after that object's loop has
    # closed hung there for the 300 s timeout (a failed test's traceback held a server
    # until the next test's garbage collection). One reference held for the whole
    # session keeps it up (each new loop still binds to it).
    from grpc.experimental.aio import init_grpc_aio

    init_grpc_aio()


#: Under pytest-xdist (``-n 2``, the README's test command) the tests run in groups, each
#: group on one worker: the tests that share a costly session fixture (Ray, llama-server,
#: the query service, the stream tests' broker) form one group, so it starts once; every
#: other file is a group of its own, so its module fixtures start once.
#: The stream tests keep their file order, as without xdist. test_rebalance run first on
#: a fresh broker, beside Ray starting on the other core, failed twice in four runs
#: (control events never committed after the rebalance); see the issue 19 note.
_SHARED = {
    "tests/workers/": "ray",
    "tests/integration/llm/": "llama",
    "tests/integration/query_service/": "service",
    "tests/integration/streams/": "streams",
}
#: The longest groups as measured (``pytest --durations``), handed out first so the two
#: workers do not end with one of them alone on a long group. Only the balance depends
#: on this list.
_LONG_FIRST = (
    "streams",
    "ray",
    "llama",
    "tests/e2e/test_cli_operable.py",
    "tests/e2e/test_cli_serve.py",
    "tests/e2e/test_cli.py",
    "tests/e2e/test_serve_stream.py",
    "tests/e2e/test_serve_crash.py",
)


def _group(nodeid: str) -> str:
    for prefix, group in _SHARED.items():
        if nodeid.startswith(prefix):
            return group
    return nodeid.split("::", 1)[0]


def _rank(item: pytest.Item) -> int:
    group = _group(item.nodeid)
    return _LONG_FIRST.index(group) if group in _LONG_FIRST else len(_LONG_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_rank)  # stable: files stay whole and in order within a group


@pytest.hookimpl(optionalhook=True)  # a known hook only where pytest-xdist is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand out whole groups (see ``_group``), in collection order, to whichever worker is free.

    xdist's own ``loadgroup`` would do the grouping from ``xdist_group`` marks, but it
    renames node ids through an attribute that pytest 9.2 no longer reads, so with
    pytest 9.2 it silently schedules test by test.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()

