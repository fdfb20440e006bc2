"""How a rollout actor reads memory: through the owning service, or from server stores.

Embedded stores admit one process, so with them the actors read through the
gRPC :class:`~memstrata.client.sync.MemoryClient` of the process that owns
the memory (:func:`serve_memory` starts one for ``eval qa``). With server
stores (Qdrant, OpenSearch) each actor may open its own read-only memory.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstrata.config import Settings, defaults
from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.roles import MemoryReader, MemoryStats


@dataclass(frozen=True)
class ServiceReaderSpec:
    """Read through a query service: one API key per tenant (a key names its tenant)."""

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

    def _for(self, tenant: str) -> Any:
        try:
            return self.clients[tenant]
        except KeyError:
            raise PermissionError(f"no key for tenant {tenant!r} on this rollout actor") from None

    def search(self, scope: Scope, queries: str | Sequence[str],
               top_k: int | None = None) -> list[SessionHit]:
        return self._for(scope.tenant_id).search(scope, queries, top_k)  # type: ignore[no-any-return]

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        return self._for(scope.tenant_id).sessions(scope)  # type: ignore[no-any-return]

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        return self._for(scope.tenant_id).session(scope, session_id)  # type: ignore[no-any-return]

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        return self._for(scope.tenant_id).l0(scope, session_id)  # type: ignore[no-any-return]

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        return self._for(scope.tenant_id).facts(scope, session_id)  # type: ignore[no-any-return]

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        return self._for(scope.tenant_id).notes(scope, session_id)  # type: ignore[no-any-return]

    def raw(self, scope: Scope, session_id: str,
            turns: Iterable[int] | None = None) -> list[Turn]:
        return self._for(scope.tenant_id).raw(scope, session_id, turns)  # type: ignore[no-any-return]

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        if tenant_id is None:
            raise PermissionError("stats of every tenant are not read through a rollout actor")
        return self._for(tenant_id).stats(tenant_id)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class StoreReaderSpec:
    """Open the server stores ``settings`` names, read-only, in the actor."""

    settings: Settings

    def open(self) -> MemoryReader:
        from memstrata.memory import Memory

        return Memory.open(self.settings, read_only=True)


ReaderSpec = ServiceReaderSpec | StoreReaderSpec


@contextmanager
def serve_memory(memory: Any, tenants: str | Iterable[str], host: str = "127.0.0.1",
                 ) -> Iterator[ServiceReaderSpec]:
    """Serve ``memory`` over gRPC on a free loopback port for the duration.

    For ``eval qa --workers`` and for a query service whose stores are embedded:
    one API key per tenant is made in a temporary keys file; limits are lifted,
    since the only callers are this process's own rollout actors.
    """
    from query_service.keys import add_key
    from memstrata.limits import TurnLimits
    from query_service.server import build_server
    from query_service.settings import ServiceSettings

    with tempfile.TemporaryDirectory(prefix="memstrata-workers-") as tmp:
        keys = Path(tmp) / "keys.json"
        names = [tenants] if isinstance(tenants, str) else sorted(set(tenants))
        tenant_keys = tuple((t, add_key(keys, t)[1]) for t in names)
        # Reads from many actors at once: more read threads than a public service's default.
        # The defaults, not MEMSTRATA_SERVICE_* (those configure the public service).
        settings = defaults(ServiceSettings).model_copy(update=dict(
            host=host, port=0, keys_file=keys, rate_per_s=1e9, read_threads=8,
            burst=1_000_000_000, max_concurrent=1_000_000,
            spend_file=Path(tmp) / "spend.json"))
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="memstrata-serve", daemon=True)
        thread.start()
        try:
            handle = asyncio.run_coroutine_threadsafe(
                build_server(memory, settings, start_workers=False,
                             turn_limits=defaults(TurnLimits)), loop).result(60)
            try:
                yield ServiceReaderSpec(f"{host}:{handle.port}", tenant_keys)
            finally:
                asyncio.run_coroutine_threadsafe(handle.stop(1.0), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
