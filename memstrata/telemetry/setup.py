"""Switch tracing on from the standard ``OTEL_*`` variables, or off again.

Tracing is on only when the environment names an exporter:
``OTEL_TRACES_EXPORTER=otlp`` (or ``console``), or an OTLP endpoint
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``)
with no exporter named. ``OTEL_TRACES_EXPORTER=none`` or
``OTEL_SDK_DISABLED=true`` keep it off. Unlike the SDK's own auto
configuration, an unset environment means off: a memstrata process never
dials a collector nobody asked for.

Everything else is the SDK's to read as usual: the endpoint, headers, timeout
and compression of the OTLP exporter, ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``, the sampler (``OTEL_TRACES_SAMPLER[_ARG]``), the
batch processor (``OTEL_BSP_*``) and the propagators (``OTEL_PROPAGATORS``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from memstrata.telemetry.state import SCOPE_NAME, STATE

__all__ = ["TelemetryConfigError", "install", "setup_from_env", "shutdown", "tracing_from_env",
           "wanted_exporters"]

log = logging.getLogger("memstrata.telemetry")

#: Exporters ``OTEL_TRACES_EXPORTER`` may name here.
EXPORTERS = ("otlp", "console", "none")
#: OTLP protocols (``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL``) and the package each needs.
PROTOCOLS = {"http/protobuf": "opentelemetry-exporter-otlp-proto-http",
             "grpc": "opentelemetry-exporter-otlp-proto-grpc"}
INSTALL_HINT = "pip install 'memstrata[otel]'"


class TelemetryConfigError(ValueError):
    """An ``OTEL_*`` variable asks for something this process cannot do."""


def wanted_exporters(env: Mapping[str, str] | None = None) -> list[str]:
    """The span exporters the environment asks for; empty: tracing stays off."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")
             if n.strip()]
    unknown = [n for n in named if n not in EXPORTERS]
    if unknown:
        raise TelemetryConfigError(
            f"OTEL_TRACES_EXPORTER: {', '.join(unknown)} is not an exporter memstrata "
            f"can use; use one of {', '.join(EXPORTERS)}")
    if "none" in named:
        return []
    if named:
        return list(dict.fromkeys(named))
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return ["otlp"]
    return []


def _protocol(env: Mapping[str, str]) -> str:
    proto = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
             or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if proto not in PROTOCOLS:
        raise TelemetryConfigError(
            f"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL: {proto!r} is "
            f"not supported; use one of {', '.join(PROTOCOLS)}")
    return proto


def _exporter(name: str, env: Mapping[str, str]) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    proto = _protocol(env)
    try:
        if proto == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
                OTLPSpanExporter,
            )
    except ImportError as exc:
        raise TelemetryConfigError(
            f"OTLP over {proto} needs the {PROTOCOLS[proto]} package ({exc}); "
            f"install it or set OTEL_EXPORTER_OTLP_PROTOCOL to another protocol") from None
    return OTLPSpanExporter()  # endpoint, headers, timeout, compression: OTEL_EXPORTER_OTLP_*


def _resource(service_name: str) -> Any:
    """``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` first; else ``service_name``."""
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource

    from memstrata import __version__

    resource = Resource.create({})
    ours: dict[str, str] = {SERVICE_VERSION: __version__}
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        ours[SERVICE_NAME] = service_name
    return resource.merge(Resource(ours))


def setup_from_env(service_name: str, env: Mapping[str, str] | None = None) -> bool:
    """Switch tracing on when the environment configures an exporter; True when on.

    Called once by each entry point (the CLI, ``python -m streams worker``) before
    it builds servers and clients. Without ``opentelemetry-sdk`` installed, a
    configured exporter is reported (a warning naming the extra) and tracing
    stays off rather than stopping the process.
    """
    env = os.environ if env is None else env
    if STATE.tracer is not None:
        return True
    names = wanted_exporters(env)
    if not names:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        log.warning("OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT ask for traces, but "
                    "the OpenTelemetry SDK is not installed (%s): %s; tracing stays off",
                    exc, INSTALL_HINT)
        return False
    exporters = [_exporter(n, env) for n in names]
    provider = TracerProvider(resource=_resource(service_name))  # sampler: OTEL_TRACES_SAMPLER
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))  # OTEL_BSP_*
    install(provider)
    # The application's own spans and other libraries' instrumentations join the same
    # traces; set once per process (the API refuses a second provider).
    trace.set_tracer_provider(provider)
    STATE.owns_global = True
    log.info("tracing on: %s spans to %s", service_name, ", ".join(names))
    return True


def tracing_from_env(service_name: str, env: Mapping[str, str] | None = None) -> bool:
    """:func:`setup_from_env`, and the trace ids on the records of the root logger's handlers.

    For entry points that configure logging themselves (``logging.basicConfig``);
    the CLI's ``setup_logging`` adds the same filter to its handler.
    """
    from memstrata.telemetry.logs import TraceContextFilter

    on = setup_from_env(service_name, env)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, TraceContextFilter) for f in handler.filters):
            handler.addFilter(TraceContextFilter())
    return on


def install(provider: Any, *, kafka: bool = True) -> None:
    """Send memstrata's spans to ``provider`` (an SDK ``TracerProvider``).

    ``kafka``: also switch on the aiokafka instrumentation (every producer then
    writes the trace context into its records' headers). Tests hand in a provider
    with an in-memory exporter; :func:`shutdown` undoes this.
    """
    from memstrata import __version__

    if STATE.tracer is not None:
        shutdown(flush=False)
    STATE.provider = provider
    STATE.tracer = provider.get_tracer(SCOPE_NAME, __version__)
    if kafka:
        _instrument_kafka(provider)


def _instrument_kafka(provider: Any) -> None:
    try:
        from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor
    except ImportError:
        log.warning("opentelemetry-instrumentation-aiokafka is not installed: turn events "
                    "carry no trace context (%s)", INSTALL_HINT)
        return
    instrumentor = AIOKafkaInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=provider)
    STATE.instrumentors.append(instrumentor)


def shutdown(*, flush: bool = True) -> None:
    """Tracing off: instrumentations undone, spans still buffered exported (``flush``)."""
    provider = STATE.provider
    for instrumentor in STATE.instrumentors:
        try:
            instrumentor.uninstrument()
        except Exception:
            log.debug("could not undo %r", instrumentor, exc_info=True)
    STATE.instrumentors.clear()
    STATE.provider = STATE.tracer = None
    if flush and provider is not None and not STATE.owns_global:
        provider.shutdown()
    elif flush and provider is not None:
        provider.force_flush()
