"""One plan per client method: the RPC, its request, and how to read the reply.

The sync and async clients share these plans and differ only in how they
invoke the stub, so the two cannot drift apart (a test runs both against one
server and compares).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from memstrata.client.errors import RemoteProfileNotFound
from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.roles import DeleteReceipt, MemoryStats
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc.convert import (
    date_to_wire,
    facts_from_wire,
    hit_from_wire,
    meta_from_wire,
    notes_from_wire,
    receipt_from_wire,
    stats_from_wire,
    turns_from_wire,
    unit_from_wire,
)
from memstrata.rpc.profiles import (
    entities_from_wire,
    entity_profiles_from_wire,
    profiles_from_wire,
)

T = TypeVar("T")


class NoValue:
    """No value: a plan without one raises on NOT_FOUND."""


_MISSING = NoValue()


@dataclass(frozen=True)
class Plan(Generic[T]):
    """One call: the RPC's name, its request, and how its reply becomes a ``T``."""

    method: str
    request: Any
    read: Callable[[Any], T]
    #: Returned instead of raising when the service answers NOT_FOUND (an unknown user
    #: has no sessions and no hits, as with a local memory).
    if_not_found: T | NoValue = _MISSING
    scope: Scope | None = None
    #: Raised with the service's message on NOT_FOUND (default: a SessionNotFound).
    not_found: Callable[[str], Exception] | None = None

    @property
    def tolerates_not_found(self) -> bool:
        return not isinstance(self.if_not_found, NoValue)


def search(scope: Scope, queries: str | Sequence[str],
           top_k: int | None) -> Plan[list[SessionHit]]:
    qs = [queries] if isinstance(queries, str) else list(queries)
    return Plan("Search", pb.SearchRequest(user_id=scope.user_id, queries=qs, top_k=top_k or 0),
                lambda r: [hit_from_wire(h, scope) for h in r.hits], [], scope)


def sessions(scope: Scope) -> Plan[list[SessionMeta]]:
    return Plan("ListSessions", pb.ListSessionsRequest(user_id=scope.user_id),
                lambda r: [meta_from_wire(s) for s in r.sessions], [], scope)


def _session_req(scope: Scope, session_id: str) -> pb.SessionRequest:
    return pb.SessionRequest(user_id=scope.user_id, session_id=session_id)


def session(scope: Scope, session_id: str) -> Plan[SessionMeta]:
    return Plan("GetSession", _session_req(scope, session_id), meta_from_wire, scope=scope)


def l0(scope: Scope, session_id: str) -> Plan[list[L0Unit]]:
    return Plan("ReadUnits", _session_req(scope, session_id),
                lambda r: [unit_from_wire(u, scope) for u in r.units], scope=scope)


def facts(scope: Scope, session_id: str) -> Plan[KeyFacts]:
    return Plan("ReadFacts", _session_req(scope, session_id), facts_from_wire, scope=scope)


def notes(scope: Scope, session_id: str) -> Plan[TurnNotes]:
    return Plan("ReadTurns", _session_req(scope, session_id), notes_from_wire, scope=scope)


def raw(scope: Scope, session_id: str, turns: Iterable[int] | None) -> Plan[list[Turn]]:
    req = pb.ReadRawRequest(user_id=scope.user_id, session_id=session_id,
                            turns=sorted(set(turns)) if turns is not None else [])
    if turns is not None and not req.turns:
        # No turns asked for: nothing to fetch, but an unknown session still fails.
        return Plan("GetSession", _session_req(scope, session_id), lambda r: [], scope=scope)
    return Plan("ReadRaw", req, lambda r: turns_from_wire(r.turns), scope=scope)


def profile(scope: Scope, entity: str) -> Plan[list[EntityProfile]]:
    return Plan("GetProfile", pb.GetProfileRequest(user_id=scope.user_id, entity=entity),
                profiles_from_wire, scope=scope, not_found=RemoteProfileNotFound)


def entities(scope: Scope, everything: bool) -> Plan[list[EntitySummary]]:
    # An unknown user has no entities, as with a local memory.
    return Plan("ListEntities", pb.ListEntitiesRequest(user_id=scope.user_id, all=everything),
                entities_from_wire, [], scope)


def entity_profiles(scope: Scope, everything: bool) -> Plan[list[EntityProfile]]:
    """Every entity's whole profile in one call (``ListEntities`` with ``profiles``)."""
    return Plan("ListEntities", pb.ListEntitiesRequest(user_id=scope.user_id, all=everything,
                                                       profiles=True),
                entity_profiles_from_wire, [], scope)


def stats(tenant_id: str | None) -> Plan[MemoryStats]:
    scope = Scope(tenant_id=tenant_id, user_id="_") if tenant_id else None
    return Plan("GetStats", pb.GetStatsRequest(), stats_from_wire, scope=scope)


def answer(scope: Scope, question: str, asked_on: datetime | None, *,
           max_steps: int | None = None, max_depth: int | None = None,
           without: Sequence[str] = ()) -> pb.AnswerRequest:
    opts = pb.AnswerOptions(max_steps=max_steps or 0, without=list(without))
    if max_depth is not None:
        opts.max_depth = max_depth
    return pb.AnswerRequest(user_id=scope.user_id, question=question,
                            asked_on=date_to_wire(asked_on), options=opts)


def delete(scope: Scope, session_id: str | None) -> Plan[DeleteReceipt]:
    def read(r: pb.DeleteReply) -> DeleteReceipt:
        return receipt_from_wire(r, scope, session_id)

    if session_id is None:
        return Plan("DeleteUser", pb.UserRequest(user_id=scope.user_id), read, scope=scope)
    return Plan("DeleteSession", _session_req(scope, session_id), read, scope=scope)


def export(tenant_id: str, user_id: str | None, *, layers: bool) -> tuple[Any, Scope]:
    """``ExportUser``'s request and the scope its metadata states (the tenant checked by the
    server against the key's): one user, or every user of the tenant when ``user_id`` is None."""
    req = pb.ExportRequest(user_id=user_id or "", all_users=user_id is None, layers=layers)
    return req, Scope(tenant_id=tenant_id, user_id=user_id or "_")


def event(scope_user: str, session_id: str, message_id: str, role: str, content: str, *,
          ts: datetime | None = None, session_date: datetime | None = None,
          speaker: str | None = None, labels: dict[str, str] | None = None,
          tenant_id: str | None = None) -> pb.TurnEvent:
    """One message to send with ``ingest``; the tenant is the call's unless ``tenant_id``
    names another one the API key may act for (a platform key)."""
    return pb.TurnEvent(user_id=scope_user, session_id=session_id, message_id=message_id,
                        role=role, content=content, ts=date_to_wire(ts),
                        session_date=date_to_wire(session_date), speaker=speaker or "",
                        labels=labels or {}, tenant_id=tenant_id or "")


def ingest(events: Sequence[pb.TurnEvent], tenant_id: str | None) -> Plan[pb.IngestReply]:
    """``IngestBatch``; ``tenant_id`` states the call's tenant (a platform key's choice)."""
    scope = Scope(tenant_id=tenant_id, user_id="_") if tenant_id else None
    return Plan("IngestBatch", pb.IngestBatchRequest(events=list(events)), lambda r: r,
                scope=scope)


@dataclass(frozen=True)
class KeyInfo:
    """What the service says the client's API key may do."""

    key_id: str
    tenant_id: str
    #: Every tenant the key may act for, its own included.
    tenants: tuple[str, ...]
    scopes: tuple[str, ...]
    #: Set: the key acts for this user only.
    user_id: str | None


def describe_key() -> Plan[KeyInfo]:
    return Plan("DescribeKey", pb.DescribeKeyRequest(), lambda r: KeyInfo(
        r.key_id, r.tenant_id, tuple(r.tenants), tuple(r.scopes), r.user_id or None))


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing and what to ask for the next (None: this was the last)."""

    items: list[T]
    next: Any


def list_users(tenant_id: str | None, after: str | None, limit: int | None) -> Plan[Page[str]]:
    scope = Scope(tenant_id=tenant_id, user_id="_") if tenant_id else None
    return Plan("ListUsers", pb.ListUsersRequest(after=after or "", limit=limit or 0),
                lambda r: Page(list(r.user_ids), r.next_after or None), scope=scope)


#: The fields of an audit entry as the clients return them (a dict per entry).
AUDIT_FIELDS = ("seq", "ts", "via", "key_id", "action", "tenant_id", "user_id", "session_id",
                "records", "outcome", "detail")


def read_audit(tenant_id: str | None, after_seq: int,
               limit: int | None) -> Plan[Page[dict[str, Any]]]:
    scope = Scope(tenant_id=tenant_id, user_id="_") if tenant_id else None
    return Plan("ReadAudit", pb.ReadAuditRequest(after_seq=after_seq, limit=limit or 0),
                lambda r: Page([{f: getattr(e, f) for f in AUDIT_FIELDS} for e in r.entries],
                               r.next_after_seq or None), scope=scope)


def metadata(api_key: str | None, scope: Scope | None) -> list[tuple[str, str]]:
    md = [("x-api-key", api_key)] if api_key else []
    if scope is not None:
        md.append(("x-memstrata-tenant", scope.tenant_id))
    return md
