"""Clients of the memstrata query service (needs the ``grpc`` extra).

:class:`MemoryClient` (blocking) and :class:`AsyncMemoryClient` implement
:class:`memstrata.roles.MemoryReader` over gRPC, so the controller runs over
a remote memory exactly as over a local one; they also ask for answers,
send turn events and delete. The API key comes from ``MEMSTRATA_API_KEY``.

Names load on first use: ``memstrata.client.settings`` (read at every start-up
to check ``MEMSTRATA_API_*`` variables) must not pull in grpc. The client speaks
through :mod:`memstrata.rpc` and returns the types of :mod:`memstrata.contract`,
so it loads no engine (no numpy, stores, encoder or controller), which an
import-linter contract and ``tests/unit/test_client_imports.py`` hold it to.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "AsyncMemoryClient": "memstrata.client.aio",
    "MemoryClient": "memstrata.client.sync",
    "ClientSettings": "memstrata.client.settings",
    "Durability": "memstrata.client.durability",
    "InvalidRequest": "memstrata.client.errors",
    "RateLimited": "memstrata.client.errors",
    "RemoteError": "memstrata.client.errors",
    "RemoteProfileNotFound": "memstrata.client.errors",
    "RemoteSessionNotFound": "memstrata.client.errors",
    "Unauthenticated": "memstrata.client.errors",
    "Unavailable": "memstrata.client.errors",
    "event": "memstrata.client.plan",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'memstrata.client' has no attribute {name!r}")
