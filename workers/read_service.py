"""The read RPCs over one memory, for this process's Ray rollout actors.

With embedded stores only the process that opened them may read them, so the
actors read through it over gRPC. They need the read calls of
``memstrata.v1.MemoryService`` and nothing else: no writes, answers, fair
scheduler, interceptors or warm-up. So this is a light server on a thread
pool, not a second query service; every other method answers UNIMPLEMENTED.

Each tenant gets a key of its own, made for the server's lifetime and handed
to the actors only: a call without one of them is UNAUTHENTICATED, and a call
reads only its key's tenant (a ``x-memstrata-tenant`` naming another is
PERMISSION_DENIED). Failures get the status the query service gives them
(NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE), so the client raises the same
errors as over the full service.
"""

from __future__ import annotations

import functools
import hmac
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

import grpc

from memstrata.contract import QueryError, SessionNotFound
from memstrata.model import Scope
from memstrata.profile_records import ProfileNotFound
from memstrata.roles import ServedMemory
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.rpc.convert import (
    facts_to_wire,
    hit_to_wire,
    meta_to_wire,
    notes_to_wire,
    stats_to_wire,
    turn_to_wire,
    unit_to_wire,
)
from memstrata.rpc.profiles import entities_to_wire, profiles_to_wire
from memstrata.store.types import StoreError

__all__ = ["ReadOnlyServicer", "ReadServer", "serve_reads"]

log = logging.getLogger(__name__)
R = TypeVar("R")

KEY_HEADER = "x-api-key"
TENANT_HEADER = "x-memstrata-tenant"
#: Highest turn index a ReadRaw may ask for (the query service's bound).
MAX_TURN = 1_000_000


class Context(Protocol):
    """The part of ``grpc.ServicerContext`` the servicer uses."""

    def invocation_metadata(self) -> Iterable[tuple[str, str | bytes]]: ...

    def abort(self, code: grpc.StatusCode, details: str) -> None: ...


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


def _status(exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status the query service gives this failure (``query_service.errors``)."""
    if isinstance(exc, _Refused):
        return exc.code, exc.details
    if isinstance(exc, (SessionNotFound, ProfileNotFound)):
        return grpc.StatusCode.NOT_FOUND, str(exc.args[0] if exc.args else exc)
    if isinstance(exc, QueryError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, StoreError):  # the backend's message stays in the log
        log.warning("a read for a rollout actor failed: a store failed (%s)",
                    type(exc).__name__)
        return grpc.StatusCode.UNAVAILABLE, "a store failed (details in the service log): " \
                                            "retry later"
    log.error("a read for a rollout actor failed with %s", type(exc).__name__)
    return grpc.StatusCode.INTERNAL, f"internal error ({type(exc).__name__})"


def _mapped(fn: Callable[[ReadOnlyServicer, R, Context], object]
            ) -> Callable[[ReadOnlyServicer, R, Context], object]:
    @functools.wraps(fn)
    def call(self: ReadOnlyServicer, request: R, context: Context) -> object:
        try:
            return fn(self, request, context)
        except Exception as exc:
            code, details = _status(exc)
            context.abort(code, details)
            raise  # unreachable: abort raises

    return call


class ReadOnlyServicer(pb_grpc.MemoryServiceServicer):
    """Search, the session and profile reads and GetStats over ``memory``; nothing else."""

    def __init__(self, memory: ServedMemory, tenant_of_key: Mapping[str, str]) -> None:
        self.memory = memory
        self._keys = dict(tenant_of_key)

    def _tenant(self, context: Context) -> str:
        metadata = {k: v if isinstance(v, str) else v.decode()
                    for k, v in context.invocation_metadata()}
        given = metadata.get(KEY_HEADER, "")
        tenant = next((t for k, t in self._keys.items()
                       if hmac.compare_digest(k.encode(), given.encode())), None)
        if tenant is None:
            raise _Refused(grpc.StatusCode.UNAUTHENTICATED, "invalid or missing API key")
        claimed = metadata.get(TENANT_HEADER)
        if claimed and claimed != tenant:
            raise _Refused(grpc.StatusCode.PERMISSION_DENIED,
                           f"{TENANT_HEADER}: this API key does not belong to tenant "
                           f"{claimed!r}")
        return tenant

    def _scope(self, context: Context, user_id: str) -> Scope:
        return Scope(tenant_id=self._tenant(context), user_id=user_id)

    @_mapped
    def Search(self, request: pb.SearchRequest, context: Context) -> pb.SearchReply:
        scope = self._scope(context, request.user_id)
        queries = list(request.queries)
        limit = self.memory.max_query_chars
        for i, q in enumerate(queries):
            if not q.strip():
                raise QueryError(f"queries[{i}]: required (empty)")
            if len(q) > limit:
                raise QueryError(f"queries[{i}]: {len(q)} characters, limit is {limit}")
        hits = self.memory.search(scope, queries, top_k=request.top_k or None)
        return pb.SearchReply(tenant_id=scope.tenant_id, user_id=scope.user_id,
                              hits=[hit_to_wire(h) for h in hits])

    @_mapped
    def ListSessions(self, request: pb.ListSessionsRequest,
                     context: Context) -> pb.ListSessionsReply:
        metas = self.memory.sessions(self._scope(context, request.user_id))
        return pb.ListSessionsReply(sessions=[meta_to_wire(m) for m in metas])

    @_mapped
    def GetSession(self, request: pb.SessionRequest, context: Context) -> pb.SessionInfo:
        scope = self._scope(context, request.user_id)
        return meta_to_wire(self.memory.session(scope, request.session_id))

    @_mapped
    def ReadUnits(self, request: pb.SessionRequest, context: Context) -> pb.UnitsReply:
        scope = self._scope(context, request.user_id)
        units = self.memory.l0(scope, request.session_id)
        return pb.UnitsReply(tenant_id=scope.tenant_id, user_id=scope.user_id,
                             units=[unit_to_wire(u) for u in units])

    @_mapped
    def ReadFacts(self, request: pb.SessionRequest, context: Context) -> pb.FactsReply:
        scope = self._scope(context, request.user_id)
        return facts_to_wire(self.memory.facts(scope, request.session_id))

    @_mapped
    def ReadTurns(self, request: pb.SessionRequest, context: Context) -> pb.NotesReply:
        scope = self._scope(context, request.user_id)
        return notes_to_wire(self.memory.notes(scope, request.session_id))

    @_mapped
    def ReadRaw(self, request: pb.ReadRawRequest, context: Context) -> pb.RawReply:
        scope = self._scope(context, request.user_id)
        for i, t in enumerate(request.turns):
            if not 1 <= t <= MAX_TURN:
                raise QueryError(f"turns[{i}]: must be between 1 and {MAX_TURN}, got {t}")
        turns = self.memory.raw(scope, request.session_id, list(request.turns) or None)
        return pb.RawReply(turns=[turn_to_wire(t) for t in turns])

    @_mapped
    def GetStats(self, request: pb.GetStatsRequest, context: Context) -> pb.StatsReply:
        return stats_to_wire(self.memory.stats(self._tenant(context)))

    @_mapped
    def GetProfile(self, request: pb.GetProfileRequest, context: Context) -> pb.GetProfileReply:
        scope = self._scope(context, request.user_id)
        return profiles_to_wire(self.memory.profile(scope, request.entity))

    @_mapped
    def ListEntities(self, request: pb.ListEntitiesRequest,
                     context: Context) -> pb.ListEntitiesReply:
        scope = self._scope(context, request.user_id)
        found = self.memory.entities(scope, everything=request.all)
        whole = self.memory.entity_profiles(scope, everything=request.all) \
            if request.profiles and found else []
        return entities_to_wire(found, whole)


@dataclass
class ReadServer:
    """A running :func:`serve_reads`: its address and each tenant's key."""

    server: grpc.Server
    address: str
    #: (tenant, key) for each tenant served.
    tenant_keys: tuple[tuple[str, str], ...]

    def stop(self, grace_s: float = 1.0) -> None:
        """Refuse new calls, give those in flight ``grace_s``, then close."""
        self.server.stop(grace_s).wait(grace_s + 5)


def serve_reads(memory: ServedMemory, tenants: Iterable[str], *, host: str = "127.0.0.1",
                threads: int = 8) -> ReadServer:
    """Start the read RPCs over ``memory`` on a free port of ``host``, a fresh key per tenant.

    ``threads`` reads run at once (the others wait for one): many actors read together.
    """
    if threads < 1:
        raise ValueError(f"threads: must be at least 1, got {threads}")
    tenant_keys = tuple((t, f"msr_{secrets.token_urlsafe(24)}") for t in sorted(set(tenants)))
    server = grpc.server(ThreadPoolExecutor(threads, thread_name_prefix="memstrata-reads"),
                         options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_MemoryServiceServicer_to_server(
        ReadOnlyServicer(memory, {k: t for t, k in tenant_keys}), server)
    try:
        port = server.add_insecure_port(f"{host}:0")
    except RuntimeError:  # newer grpcio raises where older ones returned 0
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {host}: no free port, or not an address of this "
                      f"machine")
    server.start()
    return ReadServer(server, f"{host}:{port}", tenant_keys)
