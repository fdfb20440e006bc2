"""The asyncio twin of :class:`~memstrata.client.sync.MemoryClient` (same plans, awaited)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import grpc

from memstrata.client import plan
from memstrata.client.errors import from_rpc_error
from memstrata.client.settings import ClientSettings, from_environment, tls_credentials
from memstrata.contract import Answer
from memstrata.lifecycle.records import ExportedSession
from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, TraceStep, Turn
from memstrata.model import TurnNotes
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.roles import DeleteReceipt, MemoryStats
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.rpc.answers import answer_from_wire
from memstrata.rpc.convert import step_from_wire
from memstrata.rpc.export import sessions_from_chunks
from memstrata.telemetry.grpc import aio_client_interceptors

T = TypeVar("T")


def aio_channel_for(address: str, settings: ClientSettings) -> grpc.aio.Channel:
    if settings.ca_file is not None:
        creds = grpc.ssl_channel_credentials(*tls_credentials(settings))
        return grpc.aio.secure_channel(address, creds, interceptors=aio_client_interceptors())
    # The trace context travels in the call's metadata when tracing is on.
    return grpc.aio.insecure_channel(address, interceptors=aio_client_interceptors())


class AsyncMemoryClient:
    """Async client of ``memstrata.v1.MemoryService``; create it on the loop that uses it.

    The key as :class:`~memstrata.client.sync.MemoryClient` finds it: ``api_key``, else
    ``settings``, else the environment's ``MEMSTRATA_API_KEY`` when no ``settings`` are given.
    """

    def __init__(self, address: str | None = None, *, api_key: str | None = None,
                 timeout_s: float | None = None,
                 settings: ClientSettings | None = None) -> None:
        # No settings given: MEMSTRATA_API_* from the environment (the key, the address,
        # the CA file, the timeout), as the README shows.
        self.config = settings if settings is not None else from_environment()
        address = address or self.config.address
        if not address:
            raise ValueError("no service address: pass HOST:PORT (or settings with an address)")
        self.address = address
        self._key = api_key or (self.config.key.get_secret_value()
                                if self.config.key else None)
        self._key_tenant: str | None = None  # a key's tenant never changes: asked once
        self.timeout_s = timeout_s or self.config.timeout_s
        self._channel = aio_channel_for(address, self.config)
        self._stub = pb_grpc.MemoryServiceStub(self._channel)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "AsyncMemoryClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, p: plan.Plan[T], timeout_s: float | None = None) -> T:
        try:
            reply = await getattr(self._stub, p.method)(
                p.request, metadata=plan.metadata(self._key, p.scope),
                timeout=timeout_s or self.timeout_s)
        except grpc.RpcError as exc:
            if (exc.code() == grpc.StatusCode.NOT_FOUND
                    and not isinstance(p.if_not_found, plan.NoValue)):
                return p.if_not_found
            if exc.code() == grpc.StatusCode.NOT_FOUND and p.not_found is not None:
                raise p.not_found(exc.details() or "") from None
            raise from_rpc_error(exc) from None
        return p.read(reply)

    async def search(self, scope: Scope, queries: str | Sequence[str],
                     top_k: int | None = None) -> list[SessionHit]:
        return await self._call(plan.search(scope, queries, top_k))

    async def sessions(self, scope: Scope) -> list[SessionMeta]:
        return await self._call(plan.sessions(scope))

    async def session(self, scope: Scope, session_id: str) -> SessionMeta:
        return await self._call(plan.session(scope, session_id))

    async def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        return await self._call(plan.l0(scope, session_id))

    async def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        return await self._call(plan.facts(scope, session_id))

    async def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        return await self._call(plan.notes(scope, session_id))

    async def raw(self, scope: Scope, session_id: str,
                  turns: Iterable[int] | None = None) -> list[Turn]:
        return await self._call(
            plan.raw(scope, session_id, turns))

    async def stats(self, tenant_id: str | None = None) -> MemoryStats:
        return await self._call(plan.stats(tenant_id))

    async def get_profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        """The profiles ``entity`` names (an id, name, alias, relation such as "my sister",
        or "me"), each bullet with its sources; none raises ``ProfileNotFound``."""
        return await self._call(plan.profile(scope, entity))

    async def list_entities(self, scope: Scope, *,
                      everything: bool = False) -> list[EntitySummary]:
        """The user's profiled entities, the user and the assistant first (``everything``:
        names of unknown kind too); an unknown user has none."""
        return await self._call(plan.entities(scope, everything))

    async def entity_profiles(self, scope: Scope, *,
                              everything: bool = False) -> list[EntityProfile]:
        """Every entity's whole profile in one call, in :meth:`list_entities`' order."""
        return await self._call(plan.entity_profiles(scope, everything))

    # The reader role's names, as on the blocking client.
    profile = get_profile
    entities = list_entities

    async def key_tenant(self) -> str:
        """The tenant of this client's API key, as the service resolves it (asked once)."""
        if self._key_tenant is None:
            self._key_tenant = (await self.describe_key()).tenant_id
        return self._key_tenant

    async def describe_key(self) -> plan.KeyInfo:
        """The key's own tenant, the tenants it may act for, its scopes and bound user."""
        return await self._call(plan.describe_key())

    async def list_users(self, tenant_id: str | None = None, *, after: str | None = None,
                         limit: int | None = None) -> plan.Page[str]:
        """A page of a tenant's user ids (default: the key's tenant); ``page.next`` goes on."""
        return await self._call(
            plan.list_users(tenant_id, after, limit))

    async def read_audit(self, tenant_id: str | None = None, *, after_seq: int = 0,
                         limit: int | None = None) -> plan.Page[dict[str, Any]]:
        """A page of the audit log's entries about a tenant (needs the admin scope)."""
        return await self._call(
            plan.read_audit(tenant_id, after_seq, limit))

    async def answer(self, scope: Scope, question: str, asked_on: datetime | None = None, *,
                     timeout_s: float | None = None, **options: Any) -> Answer:
        req = plan.answer(scope, question, asked_on, **options)
        return await self._call(
            plan.Plan("Answer", req, answer_from_wire, scope=scope), timeout_s)

    async def answer_stream(self, scope: Scope, question: str,
                            asked_on: datetime | None = None, *, timeout_s: float | None = None,
                            **options: Any) -> AsyncIterator[TraceStep | Answer]:
        req = plan.answer(scope, question, asked_on, **options)
        call = self._stub.AnswerStream(req, metadata=plan.metadata(self._key, scope),
                                       timeout=timeout_s or self.timeout_s)
        try:
            async for event in call:
                if event.HasField("step"):
                    yield step_from_wire(event.step)
                else:
                    yield answer_from_wire(event.answer)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            call.cancel()

    async def ingest(self, events: Sequence[pb.TurnEvent], *,
                     tenant_id: str | None = None) -> pb.IngestReply:
        """Send turn events in one batch; ``Durability.of(reply)`` says what the ack promises.
        ``tenant_id``: the call's tenant, one a platform key may act for (default: its own)."""
        return await self._call(plan.ingest(events, tenant_id))

    async def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        return await self._call(plan.delete(scope, session_id))

    async def export_user(self, tenant_id: str, user_id: str | None = None, *,
                          layers: bool = False,
                          timeout_s: float | None = None) -> AsyncIterator[ExportedSession]:
        """As :meth:`MemoryClient.export_user <memstrata.client.sync.MemoryClient.export_user>`."""
        req, scope = plan.export(tenant_id, user_id, layers=layers)
        call = self._stub.ExportUser(req, metadata=plan.metadata(self._key, scope),
                                     timeout=timeout_s)
        pending: list[Any] = []
        try:
            async for chunk in call:
                pending.append(chunk)
                if chunk.last:
                    for session in sessions_from_chunks(pending):
                        yield session
                    pending = []
            for session in sessions_from_chunks(pending):  # raises on a session cut short
                yield session
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            call.cancel()
