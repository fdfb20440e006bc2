"""A real gRPC server for the scope and audit tests, with its own keys file and audit log.

The memory is the real embedded stack holding the hand-written history of
``tests/support/conversation.py`` (tenant ``acme``, user ``maya``) plus a few
small sessions: seven users of tenant ``a`` (for paging), one of ``b`` and one of
``c`` (for the platform key that may act for ``a`` and ``b`` only). Each test
mints the keys it needs with :meth:`Scoped.key`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc

from memstrata.controller.config import ControllerSettings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.limits import TurnLimits
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.rpc import memory_pb2 as pb
from query_service.keys import add_key
from query_service.server import ServiceHandle, build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.support import LoopThread
from tests.support.conversation import open_memory

SERVICE = pb.DESCRIPTOR.services_by_name["MemoryService"]
A_USERS = [f"u{n}" for n in (1, 2, 3, 4, 5, 6, 7)]


def small_session(tenant: str, user: str, sid: str, text: str = "I like green tea.") -> Session:
    turns = [Turn(index=1, messages=[Message(role="user", content=text),
                                     Message(role="assistant", content="Noted.")])]
    return Session(meta=SessionMeta(scope=Scope(tenant_id=tenant, user_id=user),
                                    session_id=sid, session_date=datetime(2024, 5, 1)),
                   turns=turns)


@dataclass
class Scoped:
    handle: ServiceHandle
    memory: Any
    keys_path: Path
    audit_path: Path
    channel: grpc.Channel = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.handle.address)

    @property
    def address(self) -> str:
        return self.handle.address

    def key(self, tenant: str, scopes: list[str] | None = None, *, user: str | None = None,
            tenants: list[str] | None = None) -> tuple[str, str]:
        """A new key: (key id, key)."""
        return add_key(self.keys_path, tenant, scopes=scopes,  # type: ignore[arg-type]
                       user=user, tenants=tenants)

    def call(self, method: str, request: Any, key: str, tenant: str | None = None) -> Any:
        """Any RPC by name (a stream's messages as a list); raises grpc.RpcError."""
        desc = SERVICE.methods_by_name[method]
        out = getattr(pb, desc.output_type.name)
        path = f"/{SERVICE.full_name}/{method}"
        md = [("x-api-key", key)] + ([("x-memstrata-tenant", tenant)] if tenant else [])
        kind = self.channel.unary_stream if desc.server_streaming else self.channel.unary_unary
        fn = kind(path, request_serializer=type(request).SerializeToString,
                  response_deserializer=out.FromString)
        reply = fn(request, metadata=md, timeout=30)
        return list(reply) if desc.server_streaming else reply

    def refusal(self, method: str, request: Any, key: str,
                tenant: str | None = None) -> tuple[grpc.StatusCode, str]:
        """(code, details) of a call expected to fail."""
        try:
            self.call(method, request, key, tenant)
        except grpc.RpcError as exc:
            return exc.code(), exc.details() or ""
        raise AssertionError(f"{method} was not refused")


@contextmanager
def scoped_server(tmp: Path, embedder: MiniLMEmbedder) -> Iterator[Scoped]:
    memory = open_memory(tmp / "data", embedder)
    memory.ingest([small_session("a", u, f"s-{u}") for u in A_USERS]
                  + [small_session("b", "bob", "s-b"), small_session("c", "carl", "s-c")])
    keys_path, audit_path = tmp / "keys.json", tmp / "audit" / "audit.jsonl"
    loop = LoopThread()
    handle = None
    try:
        handle = loop.run(build_server(
            memory, ServiceSettings(port=0, keys_file=keys_path, audit_file=audit_path,
                                    grace_s=1),
            controller_settings=ControllerSettings(policy="rules"), turn_limits=TurnLimits(),
            start_workers=False))
        served = Scoped(handle, memory, keys_path, audit_path)
        try:
            yield served
        finally:
            served.channel.close()
    finally:
        if handle is not None:
            loop.run(handle.stop(0))
        loop.close()
        memory.close()
