"""The GenAI names memstrata uses are the installed semantic conventions' own."""

from __future__ import annotations

import logging

import pytest

from memstrata.telemetry import genai
from memstrata.telemetry.logs import TraceContextFilter
from tests.unit.telemetry.conftest import Spans

gen_ai = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")


def test_the_attribute_names_and_operations_exist_in_the_conventions() -> None:
    names = {getattr(gen_ai, n) for n in dir(gen_ai) if n.startswith("GEN_AI_")}
    ours = [genai.OPERATION, genai.PROVIDER, genai.AGENT_NAME, genai.REQUEST_MODEL,
            genai.INPUT_TOKENS, genai.OUTPUT_TOKENS, genai.TOOL_NAME, genai.TOOL_TYPE,
            genai.TOOL_ARGUMENTS, genai.DATA_SOURCE, genai.QUERY_TEXT, genai.INPUT_MESSAGES,
            genai.OUTPUT_MESSAGES]
    assert [n for n in ours if n not in names] == []
    values = {v.value for v in gen_ai.GenAiOperationNameValues}
    assert {genai.CHAT, genai.RETRIEVAL, genai.EXECUTE_TOOL, genai.INVOKE_AGENT} <= values


def test_log_records_carry_the_ids_of_the_current_span(spans: Spans) -> None:
    from memstrata.telemetry import tracer

    record = logging.LogRecord("x", logging.INFO, "f", 1, "m", None, None)
    with tracer().start_as_current_span("work") as span:
        TraceContextFilter().filter(record)
    ctx = span.get_span_context()
    assert record.trace_id == f"{ctx.trace_id:032x}"
    assert record.trace == f" trace_id={ctx.trace_id:032x} span_id={ctx.span_id:016x}"
    outside = logging.LogRecord("x", logging.INFO, "f", 1, "m", None, None)
    TraceContextFilter().filter(outside)
    assert outside.trace == ""


_LOG_PROBE = """
import logging
from opentelemetry.sdk.trace import TracerProvider
from memstrata.cli import setup_logging
from memstrata.telemetry import setup, tracer
setup_logging(logging.INFO)
log = logging.getLogger("memstrata.probe")
log.info("before any span")
setup.install(TracerProvider(), kafka=False)
with tracer().start_as_current_span("work") as span:
    log.info("inside the span")
    print(f"{span.get_span_context().trace_id:032x}")
"""


def test_the_cli_log_lines_end_with_the_trace_and_span_ids() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LOG_PROBE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    trace_id = out.stdout.strip().splitlines()[-1]
    [before] = [ln for ln in out.stderr.splitlines() if "before any span" in ln]
    [inside] = [ln for ln in out.stderr.splitlines() if "inside the span" in ln]
    assert before.endswith("before any span")
    assert f"inside the span trace_id={trace_id} span_id=" in inside
