"""OpenTelemetry traces: off unless the standard ``OTEL_*`` variables ask for them.

Nothing here imports OpenTelemetry until tracing is switched on (by
:func:`setup_from_env` finding an exporter configured, or by a test handing
:func:`install` a provider), so a process that does not trace pays one boolean
test per hook. The pieces:

* :mod:`.setup`: the provider and exporter from ``OTEL_*`` (docs/tracing.md lists them);
* :mod:`.genai`: spans named and attributed after the GenAI semantic conventions
  (an Answer, its steps and LLM calls, the memory operations);
* :mod:`.kafka`: trace context in Kafka record headers, and the worker's batch spans;
* :mod:`.grpc`: the gRPC instrumentation's interceptors, when tracing is on;
* :mod:`.logs`: the current trace and span ids on every log record;
* :mod:`.context`: work handed to a thread pool keeps the caller's span as parent.
"""

from __future__ import annotations

from memstrata.telemetry.state import enabled, propagating, tracer

__all__ = ["enabled", "propagating", "tracer"]
