"""Clients of the memstrata query service (needs the ``grpc`` extra).

:class:`MemoryClient` (blocking) and :class:`AsyncMemoryClient` implement
:class:`memstrata.roles.MemoryReader` over gRPC, so the controller runs over
a remote memory exactly as over a local one; they also ask for answers,
send turn events and delete. The API key comes from ``MEMSTRATA_API_KEY``.
"""

from memstrata.client.aio import AsyncMemoryClient
from memstrata.client.errors import (
    InvalidRequest,
    RateLimited,
    RemoteError,
    RemoteSessionNotFound,
    Unauthenticated,
)
from memstrata.client.plan import event
from memstrata.client.settings import ClientSettings
from memstrata.client.sync import MemoryClient

__all__ = ["AsyncMemoryClient", "ClientSettings", "InvalidRequest", "MemoryClient",
           "RateLimited", "RemoteError", "RemoteSessionNotFound", "Unauthenticated", "event"]
