"""One real tansu broker for every stream test (started once, always stopped)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.broker import EmbeddedBroker
from streams.topics import specs

PARTITIONS = 4
_groups = itertools.count(1)


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker(log_dir=tmp_path_factory.mktemp("tansu"))
    try:
        b.start()
        b.create_topics(specs(PARTITIONS))
        yield b
    finally:
        b.stop()


@pytest.fixture
def group(broker: EmbeddedBroker) -> str:
    """A fresh consumer group (and Faust app id) that starts after earlier tests' events."""
    from tests.integration.streams.harness import start_group_at_end

    name = f"memstrata-test-{next(_groups)}"
    start_group_at_end(broker.address, name)
    return name


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def one_worker_run(broker: EmbeddedBroker,
                   tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One worker run for the modules that registered a part (tests/.../one_worker.py)."""
    from tests.integration.streams.one_worker import run_all

    return run_all(broker, tmp_path_factory.mktemp("one-worker"))


@pytest.fixture
def batch_ingest() -> Iterator[Callable[..., Any]]:
    """``batch_ingest(data_dir, files)``: a :class:`~.harness.BatchSnapshots` child, stopped
    when the test ends (a test that failed before it asked for the result)."""
    from tests.integration.streams.harness import BatchSnapshots

    started: list[BatchSnapshots] = []

    def start(data_dir: Path, files: dict[str, tuple[Path, str]]) -> BatchSnapshots:
        started.append(BatchSnapshots(data_dir, files))
        return started[-1]

    yield start
    for b in started:
        b.stop()
