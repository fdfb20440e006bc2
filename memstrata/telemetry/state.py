"""Whether this process traces, and its tracer (one place, read by every hook)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NULL", "STATE", "State", "enabled", "propagating", "tracer"]

#: The instrumentation scope of memstrata's own spans.
SCOPE_NAME = "memstrata"
#: What every span hook returns while tracing is off: one shared, stateless no-op
#: context (``with`` on it yields None), so an off hook allocates nothing.
NULL: AbstractContextManager[Any] = nullcontext()


@dataclass
class State:
    """The provider memstrata's spans go to (None: tracing is off)."""

    provider: Any = None
    tracer: Any = None
    #: Instrumentors switched on by :func:`memstrata.telemetry.setup.install` (undone by
    #: :func:`~memstrata.telemetry.setup.shutdown`).
    instrumentors: list[Any] = field(default_factory=list)
    #: True when this module set the process-wide provider (it can be set only once).
    owns_global: bool = False


STATE = State()


def enabled() -> bool:
    """True when memstrata records spans in this process."""
    return STATE.tracer is not None


def tracer() -> Any:
    """memstrata's tracer; only meaningful when :func:`enabled` (else None)."""
    return STATE.tracer


def propagating() -> bool:
    """True when outgoing calls should carry the trace context.

    Either memstrata set tracing up, or the application did (an OpenTelemetry SDK
    provider is installed process-wide). The second is checked only when the
    application has imported OpenTelemetry already, so a client in a process
    without it imports nothing.
    """
    if STATE.tracer is not None:
        return True
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")
