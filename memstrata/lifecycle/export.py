"""Read a user's (or a whole tenant's) sessions out of a doc store and write them as an export.

The doc store holds everything an export needs (session metadata, raw turns,
L0 units, cached L1/L2), so a local export opens it alone, read-only: no
encoder, no index, no data-dir lock. The ``ExportUser`` RPC reads the served
memory's doc store with the same functions.

:class:`ExportWriter` refuses a session outside the scope it was opened for,
so an export can never carry another user's or another tenant's record, and
checks each line against the ingest schema, naming the lines that ``ingest``
would refuse as they are (an empty message, an id past the limit).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import ValidationError

from memstrata.lifecycle.records import ExportedSession, layer_record, turn_events
from memstrata.model import Scope, SessionMeta, TurnEvent
from memstrata.store.types import DocStore

__all__ = ["ExportCounts", "ExportScopeError", "ExportWriter", "read_session",
           "user_sessions"]

#: Users read per page when a whole tenant is exported.
USERS_PAGE = 500
#: Refused lines named in full (the rest are counted).
MAX_NAMED_REFUSALS = 20


class ExportScopeError(RuntimeError):
    """A session outside the export's scope reached the writer (never written)."""


def read_session(docs: DocStore, meta: SessionMeta, *, layers: bool) -> ExportedSession:
    """One stored session: its raw turns, and with ``layers`` its L0 units and cached L1/L2."""
    scope, sid = meta.scope, meta.session_id
    turns = docs.get_turns(scope, sid)
    records: list[dict[str, Any]] = []
    if layers:
        for unit in docs.session_units(scope, sid):
            records.append(layer_record(meta, "L0", {"unit": unit.model_dump(mode="json")}))
        for cached in docs.session_layers(scope, sid):
            if cached.layer in ("L1", "L2"):  # internal records (window plans) stay out
                records.append(layer_record(meta, cached.layer, {
                    "builder": cached.builder, "payload": cached.payload}))
    return ExportedSession(meta=meta, turns=turns, layers=records)


def user_sessions(docs: DocStore, scope: Scope, *, layers: bool) -> Iterator[ExportedSession]:
    """Every session of one user, oldest first (as ``memstrata sessions`` lists them)."""
    for meta in docs.list_sessions(scope):
        yield read_session(docs, meta, layers=layers)


@dataclass
class ExportCounts:
    """What an export wrote, and the lines ``ingest`` would refuse as they are."""

    users: set[str] = field(default_factory=set)
    sessions: int = 0
    turns: int = 0
    messages: int = 0
    layer_records: int = 0
    #: "line N: field: why" for the first refused lines; ``refused_count`` counts them all.
    refused: list[str] = field(default_factory=list)
    refused_count: int = 0


class ExportWriter:
    """Writes sessions of one scope (a tenant, or one of its users) as JSONL.

    ``out`` gets the header then the turn events; ``layers_out`` (optional) the
    layers records.
    """

    def __init__(self, out: IO[str], tenant_id: str, user_id: str | None = None, *,
                 layers_out: IO[str] | None = None) -> None:
        self.out = out
        self.layers_out = layers_out
        self.tenant_id = tenant_id
        self.user_id = user_id
        self.counts = ExportCounts()
        self._line = 0

    @staticmethod
    def _write(stream: IO[str], record: dict[str, Any]) -> None:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate in stored text: escaped, still exact
            text = json.dumps(record, separators=(",", ":")) + "\n"
        stream.write(text)

    def header(self, header: dict[str, Any]) -> None:
        """The first line of the turns file (:func:`.records.export_header`)."""
        self._write(self.out, header)
        self._line += 1

    def write(self, session: ExportedSession) -> None:
        """Write one session; :class:`ExportScopeError` if it is outside this export's scope."""
        scope = session.meta.scope
        if scope.tenant_id != self.tenant_id or (
                self.user_id is not None and scope.user_id != self.user_id):
            wanted = f"{self.tenant_id}/{self.user_id or '*'}"
            raise ExportScopeError(f"session {scope}/{session.meta.session_id} is outside the "
                                   f"export's scope {wanted}: nothing of it was written")
        c = self.counts
        for line in turn_events(session):
            self._line += 1
            self._check(line)
            self._write(self.out, line)
        if self.layers_out is not None:
            for record in session.layers:
                self._write(self.layers_out, record)
            c.layer_records += len(session.layers)
        c.users.add(scope.user_id)
        c.sessions += 1
        c.turns += len(session.turns)
        c.messages += session.messages

    def _check(self, line: dict[str, Any]) -> None:
        """Count (and name the first few) lines that ``ingest`` would refuse as they are."""
        try:
            TurnEvent.model_validate(line)
        except ValidationError as exc:
            c = self.counts
            c.refused_count += 1
            if len(c.refused) < MAX_NAMED_REFUSALS:
                e = exc.errors()[0]
                where = ".".join(str(p) for p in e.get("loc", ()))
                c.refused.append(f"line {self._line}: field {where!r}: {e.get('msg')}")
