"""memstrata's gRPC query service: answers, reads, writes and deletes for many tenants.

``build_server`` / ``run_server`` (:mod:`query_service.server`) host
``memstrata.v1.MemoryService`` on grpc.aio over one local
:class:`~memstrata.memory.Memory` (or server backends). The tenant of every
call comes from its API key; limits, budgets and metrics are per tenant.
Names load on first use, so reading :mod:`query_service.settings` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ServiceHandle": "query_service.server",
    "build_server": "query_service.server",
    "run_server": "query_service.server",
    "ServiceSettings": "query_service.settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'query_service' has no attribute {name!r}")
