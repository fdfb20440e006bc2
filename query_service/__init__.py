"""memstrata's gRPC query service: answers, reads, writes and deletes for many tenants.

``build_server`` / ``run_server`` (:mod:`query_service.server`) host
``memstrata.v1.MemoryService`` on grpc.aio over one local
:class:`~memstrata.memory.Memory` (or server backends). The tenant of every
call comes from its API key; limits, budgets and metrics are per tenant.
"""

from query_service.server import ServiceHandle, build_server, run_server
from query_service.settings import ServiceSettings

__all__ = ["ServiceHandle", "ServiceSettings", "build_server", "run_server"]
