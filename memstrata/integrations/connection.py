"""One connection to the service for the integrations, usable from sync and async code.

Each operation of an adapter is written once, as a generator that yields the
client calls it needs (:class:`Call`, or a list of them to make at once) and
receives their results; :func:`run` drives it with a blocking
:class:`~memstrata.client.MemoryClient`, :func:`arun` with an
:class:`~memstrata.client.AsyncMemoryClient`. So a store's ``batch`` and
``abatch`` cannot drift apart, as the client's own plans keep its sync and
async halves together.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from memstrata.client.aio import AsyncMemoryClient
from memstrata.client.errors import RemoteSessionNotFound
from memstrata.client.settings import ClientSettings
from memstrata.client.sync import MemoryClient

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One method call on a memstrata client (the same name on the sync and async one)."""

    method: str
    args: tuple[Any, ...] = ()


#: What an operation yields: one call (its result is sent back, its error thrown in),
#: or several to make at once (a list of results, an error in place of its result).
Step = Call | list[Call]
Plan = Generator[Step, Any, T]


def gone(result: Any) -> bool:
    """Whether a result of a list step says the session is not there (re-raises others)."""
    if isinstance(result, RemoteSessionNotFound):
        return True
    if isinstance(result, BaseException):
        raise result
    return False


def run(plan: Plan[T], client: MemoryClient) -> T:
    """Drive ``plan`` with blocking calls, one after the other."""
    try:
        step = next(plan)
        while True:
            if isinstance(step, list):
                step = plan.send([_attempt(client, c) for c in step])
                continue
            try:
                result = getattr(client, step.method)(*step.args)
            except Exception as exc:  # noqa: BLE001 - thrown into the plan, which decides
                step = plan.throw(exc)
                continue
            step = plan.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def _attempt(client: MemoryClient, call: Call) -> Any:
    try:
        return getattr(client, call.method)(*call.args)
    except Exception as exc:  # noqa: BLE001 - the plan inspects it (see gone)
        return exc


async def arun(plan: Plan[T], client: AsyncMemoryClient) -> T:
    """Drive ``plan`` on the running loop; the calls of a list step run concurrently."""
    try:
        step = next(plan)
        while True:
            if isinstance(step, list):
                results = await asyncio.gather(
                    *(getattr(client, c.method)(*c.args) for c in step), return_exceptions=True)
                step = plan.send(list(results))
                continue
            try:
                result = await getattr(client, step.method)(*step.args)
            except Exception as exc:  # noqa: BLE001 - thrown into the plan, which decides
                step = plan.throw(exc)
                continue
            step = plan.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


class Connection:
    """Where the service is and which key to use; opens clients on first use.

    ``address``, ``api_key`` and ``settings`` are what
    :class:`~memstrata.client.MemoryClient` takes (unset: ``MEMSTRATA_API_*`` from the
    environment). Or pass clients you made: ``client`` for blocking calls,
    ``aclient`` for async ones (it must belong to the loop that uses it). Without
    ``aclient``, one async client is opened per event loop, since a gRPC asyncio
    channel cannot move between loops.
    """

    def __init__(self, address: str | None = None, *, api_key: str | None = None,
                 settings: ClientSettings | None = None, client: MemoryClient | None = None,
                 aclient: AsyncMemoryClient | None = None) -> None:
        self._address = address
        self._api_key = api_key
        self._settings = settings
        self._client = client
        self._aclient = aclient
        self._owned: list[MemoryClient] = []
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                  AsyncMemoryClient] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def client(self) -> MemoryClient:
        with self._lock:
            if self._client is None:
                self._client = MemoryClient(self._address, api_key=self._api_key,
                                            settings=self._settings)
                self._owned.append(self._client)
            return self._client

    def aclient(self) -> AsyncMemoryClient:
        if self._aclient is not None:
            return self._aclient
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._per_loop.get(loop)
            if found is None:
                found = AsyncMemoryClient(self._address, api_key=self._api_key,
                                          settings=self._settings)
                self._per_loop[loop] = found
            return found

    def run(self, plan: Plan[T]) -> T:
        return run(plan, self.client())

    async def arun(self, plan: Plan[T]) -> T:
        return await arun(plan, self.aclient())

    def close(self) -> None:
        """Close the blocking client this connection opened (not one it was given)."""
        with self._lock:
            for client in self._owned:
                client.close()
            if self._client in self._owned:
                self._client = None
            self._owned.clear()

    async def aclose(self) -> None:
        """Close the async client this connection opened for the running loop."""
        with self._lock:
            found = self._per_loop.pop(asyncio.get_running_loop(), None)
        if found is not None:
            await found.close()
