"""Tracing installed with every finished span kept in memory (the otel extra's SDK)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memstrata.telemetry import setup


@contextmanager
def in_memory_spans() -> Iterator[Any]:
    """memstrata's tracing on, exporting to an ``InMemorySpanExporter`` (yielded); shut
    down on exit, whatever happened."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    setup.install(provider, kafka=False)
    try:
        yield exporter
    finally:
        setup.shutdown()
