"""What the interceptors learn about a call, for the handlers that serve it.

The outermost interceptor puts a :class:`CallInfo` in a context variable; the
auth interceptor fills in the tenant from the API key. Handlers read the tenant
from here and nowhere else, so no request field can name another tenant.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallInfo:
    method: str
    tenant: str | None = None
    key_id: str | None = None
    started: float = field(default_factory=time.perf_counter)
    #: What the call's key may do (a ``query_service.keys.Grant``), set by the interceptor.
    grant: Any = None
    #: Records an audited call touched (removed, exported, listed), set by its handler.
    records: int | None = None


CALL: ContextVar[CallInfo | None] = ContextVar("memstrata_call", default=None)


def method_name(full_method: str) -> str:
    """``/memstrata.v1.MemoryService/Search`` -> ``Search`` (a bounded label)."""
    return full_method.rsplit("/", 1)[-1] or full_method


def current_tenant() -> str:
    """The authenticated tenant of the running call (set by the auth interceptor)."""
    info = CALL.get()
    if info is None or info.tenant is None:
        raise RuntimeError("no authenticated tenant: the auth interceptor did not run")
    return info.tenant


def current_grant() -> Any:
    """The running call's key grant (``query_service.keys.Grant``; None outside a call)."""
    info = CALL.get()
    return info.grant if info is not None else None


def count_records(n: int) -> None:
    """Say how many records the running (audited) call touched."""
    info = CALL.get()
    if info is not None:
        info.records = (info.records or 0) + n
