"""Store writes as spans: a memory writer wrapped so each write is a memory operation.

Appends and closes are ``create_memory``, deletes ``delete_memory``, a flush
(what makes the writes durable and searchable) ``memstrata.store.flush``. The
stream worker wraps its writer with :func:`traced_writer` when tracing is on;
off, it gets its writer back unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memstrata.telemetry.genai import CREATE_MEMORY, DELETE_MEMORY, memory_span
from memstrata.telemetry.kafka import child_span
from memstrata.telemetry.state import STATE

if TYPE_CHECKING:
    from memstrata.model import Message, Scope, Session, SessionMeta, Turn
    from memstrata.roles import AppendReport, DeleteReceipt, IngestReport, MemoryWriter

__all__ = ["TracedWriter", "traced_writer"]


def traced_writer(writer: "MemoryWriter") -> "MemoryWriter":
    """``writer`` with a span per write while tracing is on; ``writer`` itself when off."""
    if STATE.tracer is None or isinstance(writer, TracedWriter):
        return writer
    return TracedWriter(writer)


def _written(span: Any, reports: "Sequence[AppendReport]") -> None:
    if span is not None:
        span.set_attributes({
            "memstrata.turns_written": sum(len(r.turns_written) for r in reports),
            "memstrata.units_written": sum(len(r.units_written) for r in reports),
            "memstrata.units_provisional": sum(len(r.provisional) for r in reports),
            "memstrata.turns_held": sum(len(r.held) for r in reports),
            "memstrata.duplicates": sum(r.duplicates for r in reports)})


class TracedWriter:
    """A :class:`~memstrata.roles.MemoryWriter` that opens a span around each write.

    Anything else the wrapped writer offers is reached through it unchanged.
    """

    def __init__(self, inner: "MemoryWriter") -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, meta: "SessionMeta", turns: "Sequence[Turn]") -> "AppendReport":
        with memory_span(CREATE_MEMORY, [meta.scope.tenant_id],
                         {"memstrata.sessions": 1, "memstrata.turns": len(turns)}) as span:
            report = self.inner.append(meta, turns)
            _written(span, [report])
            return report

    def append_messages(self, meta: "SessionMeta",
                        messages: "Sequence[Message]") -> "AppendReport":
        with memory_span(CREATE_MEMORY, [meta.scope.tenant_id],
                         {"memstrata.sessions": 1, "memstrata.messages": len(messages)}) as span:
            report = self.inner.append_messages(meta, messages)
            _written(span, [report])
            return report

    def append_batch(self, items: "Sequence[tuple[SessionMeta, Sequence[Message]]]", *,
                     hold: "Collection[tuple[Scope, str]]" = ()) -> "list[AppendReport]":
        with memory_span(CREATE_MEMORY, [m.scope.tenant_id for m, _ in items],
                         {"memstrata.sessions": len(items),
                          "memstrata.messages": sum(len(ms) for _, ms in items),
                          "memstrata.sessions_held": len(hold)}) as span:
            reports = self.inner.append_batch(items, hold=hold)
            _written(span, reports)
            return reports

    def ingest(self, sessions: "Iterable[Session]", *,
               progress: Callable[[int], None] | None = None,
               report: "IngestReport | None" = None) -> "IngestReport":
        with memory_span(CREATE_MEMORY, (), {"memstrata.write": "ingest"}) as span:
            done = self.inner.ingest(sessions, progress=progress, report=report)
            if span is not None:
                span.set_attributes({"memstrata.sessions": done.sessions,
                                     "memstrata.units_written": done.units})
            return done

    def close_session(self, scope: "Scope", session_id: str) -> "AppendReport":
        with memory_span(CREATE_MEMORY, [scope.tenant_id],
                         {"memstrata.write": "close_session"}) as span:
            report = self.inner.close_session(scope, session_id)
            _written(span, [report])
            return report

    def delete(self, scope: "Scope", session_id: str | None = None) -> "DeleteReceipt":
        what = "session" if session_id is not None else "user"
        with memory_span(DELETE_MEMORY, [scope.tenant_id], {"memstrata.delete": what}) as span:
            receipt = self.inner.delete(scope, session_id)
            if span is not None:
                span.set_attributes({"memstrata.delete.complete": receipt.complete,
                                     "memstrata.delete.removed": sum(receipt.removed.values())})
            return receipt

    def flush(self) -> None:
        with child_span("memstrata.store.flush", None):
            self.inner.flush()
