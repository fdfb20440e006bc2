"""An SDK provider with an in-memory exporter, installed for one test and removed after."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.tracing import in_memory_spans


class Spans:
    """The spans a test produced, finished ones only."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter

    def all(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[Any]:
        return [s for s in self.all() if s.name == name]


@pytest.fixture
def spans() -> Iterator[Spans]:
    pytest.importorskip("opentelemetry.sdk", reason="tracing needs the otel extra")
    with in_memory_spans() as exporter:
        yield Spans(exporter)
