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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstrata.config import Settings
from memstrata.roles import MemoryReader


@dataclass(frozen=True)
class ServiceReaderSpec:
    """Read through a query service with one tenant's API key."""

    address: str
    api_key: str
    timeout_s: float = 60.0

    def open(self) -> MemoryReader:
        from memstrata.client.sync import MemoryClient

        return MemoryClient(self.address, api_key=self.api_key,  # type: ignore[return-value]
                            timeout_s=self.timeout_s)


@dataclass(frozen=True)
class StoreReaderSpec:
    """Open the server stores ``settings`` names, read-only, in the actor."""

    settings: Settings

    def open(self) -> MemoryReader:
        from memstrata.memory import Memory

        return Memory.open(self.settings, read_only=True)


ReaderSpec = ServiceReaderSpec | StoreReaderSpec


@contextmanager
def serve_memory(memory: Any, tenant: str, host: str = "127.0.0.1") -> Iterator[ServiceReaderSpec]:
    """Serve ``memory`` over gRPC on a free port for the duration (``eval qa --workers``).

    One API key for ``tenant`` is made in a temporary keys file; limits are
    lifted, since the only callers are this run's own actors.
    """
    from query_service.keys import add_key
    from query_service.server import build_server
    from query_service.settings import ServiceSettings

    with tempfile.TemporaryDirectory(prefix="memstrata-workers-") as tmp:
        keys = Path(tmp) / "keys.json"
        _, key = add_key(keys, tenant)
        settings = ServiceSettings(host=host, port=0, keys_file=keys, rate_per_s=1e9,
                                   burst=1_000_000_000, max_concurrent=1_000_000,
                                   spend_file=Path(tmp) / "spend.json")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="memstrata-serve", daemon=True)
        thread.start()
        try:
            handle = asyncio.run_coroutine_threadsafe(
                build_server(memory, settings), loop).result(60)
            try:
                yield ServiceReaderSpec(f"{host}:{handle.port}", key)
            finally:
                asyncio.run_coroutine_threadsafe(handle.stop(1.0), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
