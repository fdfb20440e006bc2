"""Tracing is off unless the standard OTEL_* variables ask for it, and off costs nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memstrata.telemetry.setup import TelemetryConfigError, setup_from_env, wanted_exporters


@pytest.mark.parametrize("env, expected", [
    ({}, []),
    ({"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, []),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, ["otlp"]),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, ["otlp"]),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, ["otlp"]),
    ({"OTEL_TRACES_EXPORTER": "console, otlp"}, ["console", "otlp"]),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}, []),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, []),
])
def test_only_a_named_exporter_or_endpoint_switches_tracing_on(
        env: dict[str, str], expected: list[str]) -> None:
    assert wanted_exporters(env) == expected


def test_an_unknown_exporter_is_refused_naming_the_variable() -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_TRACES_EXPORTER: jaeger .*otlp"):
        wanted_exporters({"OTEL_TRACES_EXPORTER": "jaeger"})


def test_an_unknown_otlp_protocol_is_refused_naming_the_variable() -> None:
    pytest.importorskip("opentelemetry.sdk")
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
    with pytest.raises(TelemetryConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL.*http/json"):
        setup_from_env("memstrata-test", env)


def test_no_variables_means_off() -> None:
    assert setup_from_env("memstrata-test", {}) is False


#: Every hook, called as the services call them with tracing off; then the modules loaded.
_OFF_PROBE = """
import json, sys
from memstrata import telemetry
from memstrata.telemetry.context import bind
from memstrata.telemetry.genai import memory_span, search_span, traced_answer
from memstrata.telemetry.grpc import aio_client_interceptors, intercept_channel, server_interceptors
from memstrata.telemetry.kafka import batch_span, record_span, span_context
from memstrata.telemetry.logs import TraceContextFilter
from memstrata.telemetry.setup import setup_from_env
from memstrata.telemetry.writer import traced_writer
import logging

assert setup_from_env("memstrata-probe") is False
def work(): return 1
checks = {
    "enabled": telemetry.enabled(),
    "bind_is_identity": bind(work) is work,
    "server_interceptors": server_interceptors(),
    "aio_client_interceptors": aio_client_interceptors(),
    "channel_untouched": intercept_channel("CHANNEL") == "CHANNEL",
    "writer_untouched": traced_writer(work) is work,
    "same_null_context": memory_span("create_memory") is search_span("t", ["q"], 3)
        is batch_span("topic", [object()]) is record_span("topic", [("traceparent", b"x")]),
    "span_context": span_context(None),
}
with batch_span("topic", [object()]) as span:
    checks["span_is_none"] = span is None
class C:
    @traced_answer
    def answer(self, scope, question, **kw): return kw
checks["answer_passes_through"] = C().answer("scope", "q", on_step=None) == {"on_step": None}
record = logging.LogRecord("x", logging.INFO, "f", 1, "m", None, None)
TraceContextFilter().filter(record)
checks["log_trace_blank"] = record.trace == "" and record.trace_id == ""
checks["otel_loaded"] = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
print(json.dumps(checks))
"""


def test_off_every_hook_is_a_no_op_and_opentelemetry_is_never_imported() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", _OFF_PROBE], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    checks = json.loads(out.stdout.strip().splitlines()[-1])
    assert checks == {
        "enabled": False, "bind_is_identity": True, "server_interceptors": [],
        "aio_client_interceptors": None, "channel_untouched": True, "writer_untouched": True,
        "same_null_context": True, "span_context": None, "span_is_none": True,
        "answer_passes_through": True, "log_trace_blank": True, "otel_loaded": []}


#: OpenTelemetry made unimportable, as in an install without the otel extra.
_ABSENT_PROBE = """
import logging, sys
for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.sdk"):
    sys.modules[name] = None
logging.basicConfig(level=logging.WARNING)
from memstrata.telemetry import enabled
from memstrata.telemetry.setup import setup_from_env
assert setup_from_env("memstrata-probe", {"OTEL_TRACES_EXPORTER": "otlp"}) is False
assert not enabled()
from memstrata.client import MemoryClient
MemoryClient("127.0.0.1:1", api_key="probe").close()
print("ok")
"""


def test_without_the_sdk_a_configured_exporter_is_named_and_the_process_runs_untraced() -> None:
    out = subprocess.run([sys.executable, "-c", _ABSENT_PROBE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
    assert "memstrata[otel]" in out.stderr and "tracing stays off" in out.stderr


def test_the_service_name_defaults_to_the_command_and_otel_service_name_wins() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from memstrata.telemetry.setup import _resource

    saved = os.environ.pop("OTEL_SERVICE_NAME", None)
    try:
        assert _resource("memstrata-serve").attributes["service.name"] == "memstrata-serve"
        os.environ["OTEL_SERVICE_NAME"] = "memory-eu"
        resource = _resource("memstrata-serve")
        assert resource.attributes["service.name"] == "memory-eu"
        assert resource.attributes["service.version"]
    finally:
        os.environ.pop("OTEL_SERVICE_NAME", None)
        if saved is not None:
            os.environ["OTEL_SERVICE_NAME"] = saved


_APP_PROBE = """
from memstrata.telemetry import enabled, propagating
assert not propagating()
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
assert not propagating()  # the API's proxy provider: nothing configured
trace.set_tracer_provider(TracerProvider())
print(enabled(), propagating())
"""


def test_a_client_in_an_application_that_set_up_the_sdk_itself_propagates() -> None:
    pytest.importorskip("opentelemetry.sdk")
    out = subprocess.run([sys.executable, "-c", _APP_PROBE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
