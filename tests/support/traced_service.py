"""A query service on a loop thread with every span kept in memory, for tracing tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from query_service.keys import add_key
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.support import LoopThread
from tests.support.conversation import open_memory
from tests.support.tracing import in_memory_spans


@dataclass
class TracedService:
    exporter: InMemorySpanExporter
    address: str
    key: str


@contextmanager
def traced_service(tmp: Path, embedder: Any) -> Iterator[TracedService]:
    """Tracing installed with an in-memory exporter, the sample conversation's memory in
    ``tmp`` and a service over it with one acme key; everything undone on exit."""
    with in_memory_spans() as exporter:
        memory = open_memory(tmp / "data", embedder)
        key = add_key(tmp / "keys.json", "acme")[1]
        loop = LoopThread()
        handle = None
        try:
            handle = loop.run(build_server(
                memory, ServiceSettings(port=0, keys_file=tmp / "keys.json", grace_s=1),
                controller_settings=ControllerSettings(policy="rules"),
                turn_limits=TurnLimits()))
            yield TracedService(exporter, handle.address, key)
        finally:
            if handle is not None:
                loop.run(handle.stop(0))
            loop.close()
            memory.close()
