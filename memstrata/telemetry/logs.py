"""The current trace and span ids on every log record (``trace_id``, ``span_id``).

memstrata logs plain lines (no JSON logs); the filter puts the ids on the record
for any formatter or JSON handler to use, and ``%(trace)s`` in a format string
prints `` trace_id=<32 hex> span_id=<16 hex>`` while a span is current, nothing
otherwise, so a log line leads to its trace.
"""

from __future__ import annotations

import logging

from memstrata.telemetry.state import STATE

__all__ = ["TRACE_FIELD", "TraceContextFilter"]

#: Append to a format string: the ids when a span is current, else nothing.
TRACE_FIELD = "%(trace)s"


class TraceContextFilter(logging.Filter):
    """Adds ``trace_id``, ``span_id`` and ``trace`` to each record; passes every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = span_id = trace_text = ""
        if STATE.tracer is not None:
            from opentelemetry import trace

            ctx = trace.get_current_span().get_span_context()
            if ctx.is_valid:
                trace_id, span_id = f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"
                trace_text = f" trace_id={trace_id} span_id={span_id}"
        # LogRecord takes extra attributes (as logging's ``extra=`` sets them).
        record.trace_id = trace_id
        record.span_id = span_id
        record.trace = trace_text
        return True
