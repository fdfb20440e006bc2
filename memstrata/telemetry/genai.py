"""Spans after the OpenTelemetry GenAI semantic conventions: answers, their steps, memory.

An Answer is one ``invoke_agent`` span; each step of its trace
(:class:`~memstrata.model.TraceStep`) becomes one child span as it is recorded,
spanning the step's own milliseconds: LLM calls are ``chat`` spans, the
``search`` tool a ``retrieval`` span, the other tools ``execute_tool`` spans, and
the controller's own steps (cues, notes, answer...) plain internal spans. The
memory operations are ``search_memory``, ``create_memory`` and ``delete_memory``.

Attributes say the tenant (``memstrata.tenant_id``) and how deep disclosure
went (``memstrata.disclosure.layer`` per step, ``.deepest_layer`` per answer),
never the user. Text (questions, answers, queries, tool arguments, notes) is
recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is
``true`` (or ``span_only`` / ``span_and_event``), the switch the GenAI
instrumentations share.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from memstrata.telemetry.state import NULL, STATE

if TYPE_CHECKING:
    from memstrata.contract import Answer
    from memstrata.model import TraceStep

__all__ = ["CAPTURE_ENV", "capture_content", "memory_span", "search_span", "step_span_shape",
           "trace_id_of", "traced_answer"]

#: The GenAI instrumentations' content switch.
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURE_ON = frozenset({"true", "1", "span_only", "span_and_event"})

# -- attribute names: the GenAI conventions' (opentelemetry-semantic-conventions), and ours
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
DATA_SOURCE = "gen_ai.data_source.id"
QUERY_TEXT = "gen_ai.retrieval.query.text"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
CONVERSATION = "gen_ai.conversation.id"
TENANT = "memstrata.tenant_id"
TENANTS = "memstrata.tenant_ids"
LAYER = "memstrata.disclosure.layer"
DEEPEST = "memstrata.disclosure.deepest_layer"
STEP = "memstrata.step"
STEP_TOOL = "memstrata.step.tool"
NOTE = "memstrata.step.note"

#: ``gen_ai.operation.name`` values. The first five are in the conventions; the memory
#: operations are the names the GenAI memory proposal uses (not yet in the package).
CHAT, RETRIEVAL, EXECUTE_TOOL, INVOKE_AGENT = "chat", "retrieval", "execute_tool", "invoke_agent"
SEARCH_MEMORY, CREATE_MEMORY, DELETE_MEMORY = "search_memory", "create_memory", "delete_memory"

AGENT = "memstrata.controller"
DATA_SOURCE_ID = "memstrata"
#: Steps the controller records about itself (no tool, no LLM call).
OWN_STEPS = frozenset({"cues", "notes", "answer", "nudge", "llm-fallback"})

F = TypeVar("F", bound=Callable[..., Any])

def capture_content(env: Mapping[str, str] | None = None) -> bool:
    """Whether text may go on spans (the GenAI content-capture switch)."""
    value = (os.environ if env is None else env).get(CAPTURE_ENV, "")
    return value.strip().lower() in _CAPTURE_ON


def trace_id_of(span: Any) -> str:
    """A span's trace id as the 32 hex digits trace viewers search for."""
    return f"{span.get_span_context().trace_id:032x}"


def _messages(role: str, text: str, **extra: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **extra}],
                      ensure_ascii=False)


# -- answers ------------------------------------------------------------------
def traced_answer(method: F) -> F:
    """Wrap ``Controller.answer(self, scope, question, ..., on_step=...)`` in a span.

    Off, the call goes straight through. On, the answer is an ``invoke_agent`` span,
    each trace step a child span, and the answer's summary gets the ``trace_id``.
    """

    @functools.wraps(method)
    def answer(self: Any, scope: Any, question: str, *args: Any, **kwargs: Any) -> Any:
        if STATE.tracer is None:
            return method(self, scope, question, *args, **kwargs)
        return _traced(method, self, scope, question, args, kwargs)

    return answer  # type: ignore[return-value]


def _traced(method: Callable[..., Any], controller: Any, scope: Any, question: str,
            args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    from opentelemetry import trace

    capture = capture_content()
    attributes: dict[str, Any] = {OPERATION: INVOKE_AGENT, AGENT_NAME: AGENT,
                                  TENANT: scope.tenant_id}
    if capture:
        attributes[INPUT_MESSAGES] = _messages("user", question)
    with STATE.tracer.start_as_current_span(f"{INVOKE_AGENT} {AGENT}", attributes=attributes,
                                            kind=trace.SpanKind.INTERNAL) as span:
        steps = _StepSpans(STATE.tracer, trace.set_span_in_context(span), capture)
        kwargs["on_step"] = steps.wrap(kwargs.get("on_step"))
        answer = method(controller, scope, question, *args, **kwargs)
        _describe(span, answer, capture)
        answer.summary.trace_id = trace_id_of(span)
        return answer


def _describe(span: Any, answer: "Answer", capture: bool) -> None:
    s = answer.summary
    llm = [t for role, t in s.tokens.items() if role != "memory"]
    span.set_attributes({
        "memstrata.answer.mode": answer.mode, "memstrata.answer.policy": s.policy,
        "memstrata.answer.abstained": answer.abstained,
        "memstrata.answer.steps": len(answer.steps),
        "memstrata.answer.stop_reason": s.stop_reason or "",
        "memstrata.answer.sessions_drilled": s.sessions_drilled,
        "memstrata.answer.cost_usd": s.cost_usd,
        INPUT_TOKENS: sum(t.tokens_in for t in llm), OUTPUT_TOKENS: sum(t.tokens_out for t in llm),
    })
    if s.deepest_layer is not None:
        span.set_attribute(DEEPEST, int(s.deepest_layer))
    if answer.fallback:
        span.set_attribute("memstrata.answer.fallback", answer.fallback)
    if capture:
        span.set_attribute(OUTPUT_MESSAGES, _messages("assistant", answer.answer,
                                                      finish_reason="stop"))


def step_span_shape(step: "TraceStep", capture: bool) -> tuple[str, dict[str, Any]]:
    """The span name and attributes one trace step gets (the mapping docs/tracing.md shows)."""
    attrs: dict[str, Any] = {STEP: step.step, STEP_TOOL: step.tool}
    if step.layer is not None:
        attrs[LAYER] = int(step.layer)
    if step.sessions:
        attrs["memstrata.step.sessions"] = len(step.sessions)
    if step.cached is not None:
        attrs["memstrata.step.cached"] = step.cached
    if step.tool.startswith("llm:"):
        model = str(step.arguments.get("model", ""))
        attrs.update({OPERATION: CHAT, PROVIDER: "openai", REQUEST_MODEL: model,
                      INPUT_TOKENS: step.tokens_in, OUTPUT_TOKENS: step.tokens_out,
                      "memstrata.llm.role": step.tool[4:]})
        name = f"{CHAT} {model}".strip()
    elif step.tool == "search":
        attrs.update({OPERATION: RETRIEVAL, DATA_SOURCE: DATA_SOURCE_ID,
                      "memstrata.step.tokens_read": step.tokens_out})
        name = f"{RETRIEVAL} {DATA_SOURCE_ID}"
        if capture:
            queries = step.arguments.get("queries") or step.arguments.get("query") or []
            text = "\n".join(map(str, queries)) if isinstance(queries, list) else str(queries)
            attrs[QUERY_TEXT] = text
    elif step.tool in OWN_STEPS:
        name = f"memstrata.{step.tool}"
    else:
        attrs.update({OPERATION: EXECUTE_TOOL, TOOL_NAME: step.tool, TOOL_TYPE: "function",
                      "memstrata.step.tokens_read": step.tokens_out})
        name = f"{EXECUTE_TOOL} {step.tool}"
    if capture:
        if step.arguments:
            attrs[TOOL_ARGUMENTS] = json.dumps(step.arguments, ensure_ascii=False, default=str)
        if step.note:
            attrs[NOTE] = step.note
    return name, attrs


class _StepSpans:
    """Turns each recorded trace step into a finished child span of the answer."""

    def __init__(self, tracer: Any, parent: Any, capture: bool) -> None:
        self.tracer, self.parent, self.capture = tracer, parent, capture

    def wrap(self, on_step: Callable[["TraceStep"], None] | None
             ) -> Callable[["TraceStep"], None]:
        def record(step: "TraceStep") -> None:
            self.record(step)
            if on_step is not None:
                on_step(step)

        return record

    def record(self, step: "TraceStep") -> None:
        from opentelemetry.trace import Status, StatusCode

        end = time.time_ns()
        name, attrs = step_span_shape(step, self.capture)
        span = self.tracer.start_span(name, context=self.parent, attributes=attrs,
                                      start_time=end - int(step.ms * 1_000_000))
        if step.note and step.note.startswith("error: "):
            span.set_status(Status(StatusCode.ERROR, step.note if self.capture else None))
        span.end(end_time=end)


# -- memory operations ----------------------------------------------------------
def memory_span(operation: str, tenants: Sequence[str] = (),
                attributes: Mapping[str, Any] | None = None) -> AbstractContextManager[Any]:
    """A span for one memory operation (``search_memory``, ``create_memory``...).

    Off: a shared no-op context (yields None). ``tenants``: one becomes
    ``memstrata.tenant_id``, several ``memstrata.tenant_ids``. Attributes whose
    value is None are left out.
    """
    if STATE.tracer is None:
        return NULL
    return _memory_span(operation, tenants, dict(attributes or {}))


@contextmanager
def _memory_span(operation: str, tenants: Sequence[str], extra: dict[str, Any]) -> Iterator[Any]:
    attrs: dict[str, Any] = {OPERATION: operation, DATA_SOURCE: DATA_SOURCE_ID}
    distinct = sorted(set(tenants))
    if len(distinct) == 1:
        attrs[TENANT] = distinct[0]
    elif distinct:
        attrs[TENANTS] = distinct
    attrs.update({k: v for k, v in extra.items() if v is not None})
    with STATE.tracer.start_as_current_span(f"{operation} {DATA_SOURCE_ID}",
                                            attributes=attrs) as span:
        yield span


def search_span(tenant_id: str, queries: Sequence[str], top_k: int | None
                ) -> AbstractContextManager[Any]:
    """``search_memory`` for one Search call (the query text only with content capture)."""
    if STATE.tracer is None:
        return NULL
    attrs: dict[str, Any] = {"memstrata.queries": len(queries), "memstrata.top_k": top_k}
    if capture_content():
        attrs[QUERY_TEXT] = "\n".join(queries)
    return _memory_span(SEARCH_MEMORY, [tenant_id], attrs)
