"""The export format, shared by the local export, the ``ExportUser`` RPC and its client.

An export is two JSONL files:

* the **turns file**: a header line ``{"memstrata_export": {...}}`` (what was
  exported, from where, when; ``ingest`` skips it), then one turn event per
  message, exactly the JSONL that ``memstrata ingest`` and ``memstrata
  produce`` read: ``tenant_id``, ``user_id``, ``session_id``, ``session_date``,
  ``role``, ``content``, ``speaker`` and ``message_id`` when the message has
  them, and the session's ``labels`` on every line. Messages keep their order,
  so ingest groups them into the same turns (a user message opens a turn).
* the **layers file** (``--layers``): one record per derived layer, never read
  by ``ingest`` (which rebuilds the layers): ``{"layer": "L0", ..., "unit":
  {...}}`` per L0 unit, ``{"layer": "L1" | "L2", ..., "builder": VERSION,
  "payload": {...}}`` per cached L1/L2.

This module imports the domain model only: the client assembles what the RPC
streams into :class:`ExportedSession` objects without loading any store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memstrata.model import EXPORT_HEADER_KEY, SessionMeta, Turn

__all__ = ["EXPORT_VERSION", "ExportedSession", "export_header", "turn_events"]

#: The version of the format written in the header (bumped on an incompatible change).
EXPORT_VERSION = 1
#: The derived layers a layers file may hold.
DERIVED_LAYERS = ("L0", "L1", "L2")


@dataclass
class ExportedSession:
    """One session as exported: its metadata, its raw turns and (optionally) its layers."""

    meta: SessionMeta
    turns: list[Turn]
    #: Layers-file records of the session (empty unless the layers were asked for).
    layers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(len(t.messages) for t in self.turns)


def _identity(meta: SessionMeta) -> dict[str, Any]:
    return {"tenant_id": meta.scope.tenant_id, "user_id": meta.scope.user_id,
            "session_id": meta.session_id}


def turn_events(session: ExportedSession) -> list[dict[str, Any]]:
    """The session's messages as turn events (one JSONL line each), in order."""
    meta = session.meta
    base = {**_identity(meta),
            "session_date": meta.session_date.isoformat() if meta.session_date else None}
    lines = []
    for turn in session.turns:
        for m in turn.messages:
            line: dict[str, Any] = {**base, "role": m.role, "content": m.content}
            if m.speaker is not None:
                line["speaker"] = m.speaker
            if m.source_id is not None:
                line["message_id"] = m.source_id
            if m.redacted:  # masked before storage (memstrata.redact): the kinds masked
                line["redacted"] = list(m.redacted)
            line["labels"] = dict(meta.labels)
            lines.append(line)
    return lines


def layer_record(meta: SessionMeta, layer: str, body: dict[str, Any]) -> dict[str, Any]:
    """A layers-file record: the layer, the session it belongs to, then ``body``."""
    if layer not in DERIVED_LAYERS:
        raise ValueError(f"layer: one of {', '.join(DERIVED_LAYERS)}, got {layer!r}")
    return {"layer": layer, **_identity(meta), **body}


def export_header(*, tenant_id: str, user_id: str | None, source: str,
                  layers_file: str | None, exported_at: datetime, version: str) -> dict[str, Any]:
    """The first line of a turns file: what was exported, from where and when."""
    scope: Literal["user", "tenant"] = "tenant" if user_id is None else "user"
    return {EXPORT_HEADER_KEY: {
        "format": EXPORT_VERSION, "exported_at": exported_at.isoformat(), "scope": scope,
        "tenant_id": tenant_id, "user_id": user_id, "source": source,
        "layers_file": layers_file, "memstrata": version}}
