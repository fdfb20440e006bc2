"""The blocking client: a :class:`~memstrata.roles.MemoryReader` over gRPC, plus answers,
writes and deletes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
from memstrata.telemetry.grpc import intercept_channel

T = TypeVar("T")


def channel_for(address: str, settings: ClientSettings) -> grpc.Channel:
    if settings.ca_file is not None:
        creds = grpc.ssl_channel_credentials(*tls_credentials(settings))
        return intercept_channel(grpc.secure_channel(address, creds))
    return intercept_channel(grpc.insecure_channel(address))  # traceparent when tracing


class MemoryClient:
    """Blocking client of ``memstrata.v1.MemoryService``.

    The API key comes from ``api_key``, else from ``settings`` (an entry point passes the
    ``MEMSTRATA_API_*`` it loaded), else from the environment's ``MEMSTRATA_API_KEY`` when no
    ``settings`` are given; the tenant is the key's, and a ``Scope`` naming another tenant is
    refused by the server.
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
        key = api_key or (self.config.key.get_secret_value()
                          if self.config.key else None)
        self._key = key
        self._key_tenant: str | None = None  # a key's tenant never changes: asked once
        self.timeout_s = timeout_s or self.config.timeout_s
        self._channel = channel_for(address, self.config)
        self._stub = pb_grpc.MemoryServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "MemoryClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _md(self, scope: Scope | None) -> list[tuple[str, str]]:
        return plan.metadata(self._key, scope)

    def _call(self, p: plan.Plan[T], timeout_s: float | None = None) -> T:
        try:
            reply = getattr(self._stub, p.method)(p.request, metadata=self._md(p.scope),
                                                  timeout=timeout_s or self.timeout_s)
        except grpc.RpcError as exc:
            if (exc.code() == grpc.StatusCode.NOT_FOUND
                    and not isinstance(p.if_not_found, plan.NoValue)):
                return p.if_not_found
            if exc.code() == grpc.StatusCode.NOT_FOUND and p.not_found is not None:
                raise p.not_found(exc.details() or "") from None
            raise from_rpc_error(exc) from None
        return p.read(reply)

    # -- MemoryReader --------------------------------------------------------
    def search(self, scope: Scope, queries: str | Sequence[str],
               top_k: int | None = None) -> list[SessionHit]:
        return self._call(plan.search(scope, queries, top_k))

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        return self._call(plan.sessions(scope))

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        return self._call(plan.session(scope, session_id))

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        return self._call(plan.l0(scope, session_id))

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        return self._call(plan.facts(scope, session_id))

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        return self._call(plan.notes(scope, session_id))

    def raw(self, scope: Scope, session_id: str,
            turns: Iterable[int] | None = None) -> list[Turn]:
        return self._call(plan.raw(scope, session_id, turns))

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        return self._call(plan.stats(tenant_id))

    def get_profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        """The profiles ``entity`` names (an id, name, alias, relation such as "my sister",
        or "me"), each bullet with its sources; none raises ``ProfileNotFound``."""
        return self._call(plan.profile(scope, entity))

    def list_entities(self, scope: Scope, *,
                      everything: bool = False) -> list[EntitySummary]:
        """The user's profiled entities, the user and the assistant first (``everything``:
        names of unknown kind too); an unknown user has none."""
        return self._call(plan.entities(scope, everything))

    # The reader role's names for the two reads above (a client is a MemoryReader).
    profile = get_profile
    entities = list_entities

    def entity_profiles(self, scope: Scope, *,
                        everything: bool = False) -> list[EntityProfile]:
        """Every entity's whole profile in one call, in :meth:`list_entities`' order."""
        return self._call(plan.entity_profiles(scope, everything))

    def key_tenant(self) -> str:
        """The tenant of this client's API key, as the service resolves it.

        A ``Scope`` built with it is never refused for naming another tenant; the
        command line uses it when ``--tenant`` is not given.
        """
        if self._key_tenant is None:
            self._key_tenant = self.describe_key().tenant_id
        return self._key_tenant

    def describe_key(self) -> plan.KeyInfo:
        """The key's own tenant, the tenants it may act for, its scopes and bound user."""
        return self._call(plan.describe_key())

    def list_users(self, tenant_id: str | None = None, *, after: str | None = None,
                   limit: int | None = None) -> plan.Page[str]:
        """A page of a tenant's user ids (default: the key's tenant), in id order; pass
        ``page.next`` as ``after`` for the next page (None: this was the last)."""
        return self._call(plan.list_users(tenant_id, after, limit))

    def read_audit(self, tenant_id: str | None = None, *, after_seq: int = 0,
                   limit: int | None = None) -> plan.Page[dict[str, Any]]:
        """A page of the audit log's entries about a tenant (needs the admin scope);
        ``page.next`` is the ``after_seq`` of the next page (None: no more)."""
        return self._call(
            plan.read_audit(tenant_id, after_seq, limit))

    # -- answers ---------------------------------------------------------------
    def answer(self, scope: Scope, question: str, asked_on: datetime | None = None, *,
               timeout_s: float | None = None, **options: Any) -> Answer:
        """The controller's answer, computed by the service (``options``: max_steps,
        max_depth, without)."""
        req = plan.answer(scope, question, asked_on, **options)
        return self._call(plan.Plan("Answer", req, answer_from_wire, scope=scope),
                          timeout_s)

    def answer_stream(self, scope: Scope, question: str, asked_on: datetime | None = None, *,
                      timeout_s: float | None = None,
                      **options: Any) -> Iterator[TraceStep | Answer]:
        """Each controller step as the service records it, then the answer."""
        req = plan.answer(scope, question, asked_on, **options)
        call = self._stub.AnswerStream(req, metadata=self._md(scope),
                                       timeout=timeout_s or self.timeout_s)
        try:
            for event in call:
                if event.HasField("step"):
                    yield step_from_wire(event.step)
                else:
                    yield answer_from_wire(event.answer)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            call.cancel()

    # -- writes and deletes -------------------------------------------------------
    def ingest(self, events: Sequence[pb.TurnEvent], *,
               tenant_id: str | None = None) -> pb.IngestReply:
        """Send turn events (see :func:`memstrata.client.plan.event`) in one batch.

        The reply's ``durability`` (``Durability.of(reply)``) says what the
        acknowledgement promises: ``stored`` (in the stores) or ``broker`` (Kafka).
        ``tenant_id``: the call's tenant, one a platform key may act for (default: its own).
        """
        return self._call(plan.ingest(events, tenant_id))

    def close_session(self, scope: Scope, session_id: str) -> int:
        return self._call(plan.Plan(
            "CloseSession", pb.SessionRequest(user_id=scope.user_id, session_id=session_id),
            lambda r: r.units_written, scope=scope))

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        return self._call(plan.delete(scope, session_id))

    # -- export -----------------------------------------------------------------
    def export_user(self, tenant_id: str, user_id: str | None = None, *, layers: bool = False,
                    timeout_s: float | None = None) -> Iterator[ExportedSession]:
        """A user's sessions, or every user's of the tenant (``user_id`` None), one at a time
        (the tenant must be the key's); no deadline unless ``timeout_s`` is given."""
        req, scope = plan.export(tenant_id, user_id, layers=layers)
        call = self._stub.ExportUser(req, metadata=self._md(scope), timeout=timeout_s)
        try:
            yield from sessions_from_chunks(call)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            call.cancel()

