"""How a rollout actor reads memory: through the owning process, or from server stores.

Embedded stores admit one process, so with them the actors read through the
gRPC :class:`~memstrata.client.sync.MemoryClient` from the process that owns
the memory: :func:`serve_memory` starts the read RPCs there
(:mod:`workers.read_service`, for ``eval qa`` and ``serve``). With server
stores (Qdrant, OpenSearch) each actor may open its own read-only memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstrata.config import Settings
from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.roles import MemoryReader, MemoryStats, ServedMemory

if TYPE_CHECKING:
    from memstrata.client.sync import MemoryClient


@dataclass(frozen=True)
class ServiceReaderSpec:
    """Read over gRPC (:func:`serve_memory`, or a query service): one key per tenant."""

    address: str
    tenant_keys: tuple[tuple[str, str], ...]
    timeout_s: float = 60.0

    def open(self) -> MemoryReader:
        return TenantRoutedReader(self.address, dict(self.tenant_keys), self.timeout_s)


class TenantRoutedReader:
    """A MemoryReader over gRPC that uses the key of each call's tenant."""

    def __init__(self, address: str, keys: dict[str, str], timeout_s: float) -> None:
        from memstrata.client.sync import MemoryClient

        self.clients = {t: MemoryClient(address, api_key=k, timeout_s=timeout_s)
                        for t, k in keys.items()}

    def _for(self, tenant: str) -> MemoryClient:
        try:
            return self.clients[tenant]
        except KeyError:
            raise PermissionError(f"no key for tenant {tenant!r} on this rollout actor") from None

    def search(self, scope: Scope, queries: str | Sequence[str],
               top_k: int | None = None) -> list[SessionHit]:
        return self._for(scope.tenant_id).search(scope, queries, top_k)

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        return self._for(scope.tenant_id).sessions(scope)

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        return self._for(scope.tenant_id).session(scope, session_id)

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        return self._for(scope.tenant_id).l0(scope, session_id)

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        return self._for(scope.tenant_id).facts(scope, session_id)

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        return self._for(scope.tenant_id).notes(scope, session_id)

    def raw(self, scope: Scope, session_id: str,
            turns: Iterable[int] | None = None) -> list[Turn]:
        return self._for(scope.tenant_id).raw(scope, session_id, turns)

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        if tenant_id is None:
            raise PermissionError("stats of every tenant are not read through a rollout actor")
        return self._for(tenant_id).stats(tenant_id)

    def profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        return self._for(scope.tenant_id).get_profile(scope, entity)

    def entities(self, scope: Scope, *, everything: bool = False) -> list[EntitySummary]:
        return self._for(scope.tenant_id).list_entities(scope, everything=everything)

    def entity_profiles(self, scope: Scope, *,
                        everything: bool = False) -> list[EntityProfile]:
        return self._for(scope.tenant_id).entity_profiles(scope, everything=everything)


@dataclass(frozen=True)
class StoreReaderSpec:
    """Open the server stores ``settings`` names, read-only, in the actor."""

    settings: Settings

    def open(self) -> MemoryReader:
        from memstrata.memory import Memory

        return Memory.open(self.settings, read_only=True)


ReaderSpec = ServiceReaderSpec | StoreReaderSpec


@contextmanager
def serve_memory(memory: ServedMemory, tenants: str | Iterable[str], host: str = "127.0.0.1",
                 ) -> Iterator[ServiceReaderSpec]:
    """Serve ``memory``'s read RPCs over gRPC on a free port of ``host`` for the duration.

    For ``eval qa --workers`` and for a query service whose stores are embedded:
    one key per tenant, made for this server and handed to the actors only. A
    light read-only server (:mod:`workers.read_service`), not a second query
    service: the only callers are this process's own rollout actors.
    """
    from workers.read_service import serve_reads

    names = [tenants] if isinstance(tenants, str) else tenants
    # Reads from many actors at once: eight read threads.
    server = serve_reads(memory, names, host=host, threads=8)
    try:
        yield ServiceReaderSpec(server.address, server.tenant_keys)
    finally:
        server.stop(1.0)
