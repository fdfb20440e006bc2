"""Domain models to wire messages and back, exactly.

Server and client both go through these functions, so a value read over gRPC
equals the value the library returns (the congruence tests compare them
field by field). Dates travel as ISO 8601 strings: ``datetime.isoformat`` and
``fromisoformat`` round-trip naive and zoned datetimes alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from memstrata.model import (
    KeyFact,
    KeyFacts,
    L0Unit,
    Layer,
    Message,
    Scope,
    SessionHit,
    SessionMeta,
    TraceStep,
    Turn,
    TurnNote,
    TurnNotes,
)
from memstrata.roles import DeleteReceipt, MemoryStats
from memstrata.rpc import memory_pb2 as pb
from memstrata.unit_caches import PerUnit

__all__ = [
    "date_from_wire", "date_to_wire", "facts_from_wire", "facts_to_wire", "hit_from_wire",
    "hit_to_wire", "meta_from_wire", "meta_to_wire", "notes_from_wire", "notes_to_wire",
    "receipt_from_wire", "receipt_to_wire", "stats_from_wire", "stats_to_wire",
    "step_from_wire", "step_to_wire", "turn_from_wire", "turn_to_wire", "turns_from_wire",
    "unit_from_wire", "unit_to_wire",
]


def date_to_wire(value: datetime | None) -> str:
    return value.isoformat() if value is not None else ""


def date_from_wire(value: str) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def meta_to_wire(meta: SessionMeta) -> pb.SessionInfo:
    return pb.SessionInfo(tenant_id=meta.scope.tenant_id, user_id=meta.scope.user_id,
                          session_id=meta.session_id, session_date=date_to_wire(meta.session_date),
                          labels=dict(meta.labels))


def meta_from_wire(info: pb.SessionInfo) -> SessionMeta:
    return SessionMeta(scope=Scope(tenant_id=info.tenant_id, user_id=info.user_id),
                       session_id=info.session_id,
                       session_date=date_from_wire(info.session_date), labels=dict(info.labels))


def unit_to_wire(unit: L0Unit) -> pb.Unit:
    return pb.Unit(id=unit.id, session_id=unit.session_id,
                   session_date=date_to_wire(unit.session_date), turn_index=unit.turn_index,
                   summary=unit.summary, keywords=unit.keywords, tags=unit.tags,
                   source_ids=unit.source_ids)


def unit_from_wire(unit: pb.Unit, scope: Scope) -> L0Unit:
    return L0Unit(id=unit.id, scope=scope, session_id=unit.session_id,
                  session_date=date_from_wire(unit.session_date), turn_index=unit.turn_index,
                  summary=unit.summary, keywords=list(unit.keywords), tags=list(unit.tags),
                  source_ids=list(unit.source_ids))


#: ``pb.Unit`` per unit object (memstrata.unit_caches.PerUnit). A Search reply holds up
#: to 100 units, mostly the same ones search after search (the doc store hands out one
#: parsed object per stored text), and building a ``pb.Unit`` field by field is most of
#: the reply's cost; a repeated field copies the message it is given, so the cached one
#: is never changed.
_wire_unit: PerUnit[pb.Unit] = PerUnit(unit_to_wire)


def hit_to_wire(hit: SessionHit) -> pb.SessionHit:
    return pb.SessionHit(session_id=hit.session_id, score=hit.score,
                         session_date=date_to_wire(hit.session_date),
                         units=[_wire_unit(u) for u in hit.units])


def hit_from_wire(hit: pb.SessionHit, scope: Scope) -> SessionHit:
    return SessionHit(session_id=hit.session_id, score=hit.score,
                      session_date=date_from_wire(hit.session_date),
                      units=[unit_from_wire(u, scope) for u in hit.units])


def turn_to_wire(turn: Turn) -> pb.Turn:
    return pb.Turn(index=turn.index, messages=[
        pb.Message(role=m.role, content=m.content, speaker=m.speaker or "",
                   source_id=m.source_id or "") for m in turn.messages])


def turn_from_wire(turn: pb.Turn) -> Turn:
    return Turn(index=turn.index, messages=[
        Message(role=m.role, content=m.content, speaker=m.speaker or None,  # type: ignore[arg-type]
                source_id=m.source_id or None) for m in turn.messages])


def facts_to_wire(facts: KeyFacts) -> pb.FactsReply:
    return pb.FactsReply(session=meta_to_wire(facts.meta), builder=facts.builder, facts=[
        pb.Fact(text=f.text, turn_indices=f.turn_indices) for f in facts.facts])


def facts_from_wire(reply: pb.FactsReply) -> KeyFacts:
    return KeyFacts(meta=meta_from_wire(reply.session), builder=reply.builder, facts=[
        KeyFact(text=f.text, turn_indices=list(f.turn_indices)) for f in reply.facts])


def notes_to_wire(notes: TurnNotes) -> pb.NotesReply:
    return pb.NotesReply(session=meta_to_wire(notes.meta), builder=notes.builder, notes=[
        pb.TurnNote(turn_index=n.turn_index, bullets=n.bullets) for n in notes.notes])


def notes_from_wire(reply: pb.NotesReply) -> TurnNotes:
    return TurnNotes(meta=meta_from_wire(reply.session), builder=reply.builder, notes=[
        TurnNote(turn_index=n.turn_index, bullets=list(n.bullets)) for n in reply.notes])


def step_to_wire(step: TraceStep) -> pb.TraceStep:
    msg = pb.TraceStep(step=step.step, tool=step.tool,
                       arguments_json=json.dumps(step.arguments, ensure_ascii=False, default=str),
                       sessions=step.sessions, tokens_in=step.tokens_in,
                       tokens_out=step.tokens_out, ms=step.ms, note=step.note or "")
    if step.layer is not None:
        msg.layer = int(step.layer)
    return msg


def step_from_wire(step: pb.TraceStep) -> TraceStep:
    arguments: dict[str, Any] = json.loads(step.arguments_json) if step.arguments_json else {}
    return TraceStep(step=step.step, tool=step.tool, arguments=arguments,
                     sessions=list(step.sessions),
                     layer=Layer(step.layer) if step.HasField("layer") else None,
                     tokens_in=step.tokens_in, tokens_out=step.tokens_out, ms=step.ms,
                     note=step.note or None)


def turns_from_wire(turns: Iterable[pb.Turn]) -> list[Turn]:
    return [turn_from_wire(t) for t in turns]


def stats_to_wire(stats: MemoryStats) -> pb.StatsReply:
    return pb.StatsReply(tenant_id=stats.tenant_id or "", users=stats.users,
                         sessions=stats.sessions, turns=stats.turns, units=stats.units,
                         cached_layers=stats.cached_layers)


def stats_from_wire(reply: pb.StatsReply) -> MemoryStats:
    return MemoryStats(tenant_id=reply.tenant_id, users=reply.users, sessions=reply.sessions,
                       turns=reply.turns, units=reply.units,
                       cached_layers=dict(reply.cached_layers))


def receipt_to_wire(receipt: DeleteReceipt) -> pb.DeleteReply:
    return pb.DeleteReply(removed=[pb.StoreCount(store=k, removed=v)
                                   for k, v in sorted(receipt.removed.items())],
                          complete=receipt.complete)


def receipt_from_wire(reply: pb.DeleteReply, scope: Scope,
                      session_id: str | None) -> DeleteReceipt:
    """The scope and session are the request's (the reply does not repeat them)."""
    return DeleteReceipt(scope=scope, session_id=session_id,
                         removed={c.store: c.removed for c in reply.removed},
                         complete=reply.complete)
