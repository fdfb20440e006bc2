"""A real gRPC server on a loopback port, started once for the whole test session.

The memory is the real embedded stack holding the hand-written history of
tests/support/conversation.py for tenant ``acme`` and a different history
for the same user id under tenant ``globex`` (the isolation tests need two
tenants with colliding user ids). Keys live in a real keys file. A second
server over the same memory, slowed by the SlowReader test double, serves the
cancellation, deadline and concurrency tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.limits import TurnLimits
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from query_service.keys import TenantPolicy, add_key, revoke_key, set_tenant_policy
from query_service.server import ServiceHandle, build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.support import LoopThread, SlowReader
from tests.support.conversation import open_memory

GLOBEX_MAYA = Scope(tenant_id="globex", user_id="maya")


def globex_sessions() -> list[Session]:
    turns = [Turn(index=1, messages=[
        Message(role="user", content="My dog Biscuit learned to open the fridge."),
        Message(role="assistant", content="Biscuit sounds clever; try a child lock.")])]
    return [Session(meta=SessionMeta(scope=GLOBEX_MAYA, session_id="g1-dog",
                                     session_date=datetime(2024, 2, 1, 10, 0)), turns=turns)]


@dataclass
class Keys:
    acme: str
    globex: str
    revoked: str
    tiny: str
    path: Path


@dataclass
class Service:
    handle: ServiceHandle
    slow: ServiceHandle
    slow_reader: SlowReader
    keys: Keys
    loop: LoopThread
    memory: object

    @property
    def address(self) -> str:
        return self.handle.address

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.handle.metrics_http.server_port}/metrics"


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory,
            embedder: MiniLMEmbedder) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("query_service")
    memory = open_memory(tmp / "data", embedder)
    memory.ingest(globex_sessions())
    keys_path = tmp / "keys.json"
    keys = Keys(acme=add_key(keys_path, "acme")[1], globex=add_key(keys_path, "globex")[1],
                revoked="", tiny=add_key(keys_path, "tiny")[1], path=keys_path)
    revoked_id, keys.revoked = add_key(keys_path, "acme")
    revoke_key(keys_path, revoked_id)
    set_tenant_policy(keys_path, "tiny", TenantPolicy(rate_per_s=2, burst=2, max_concurrent=1))
    loop = LoopThread()
    settings = ServiceSettings(port=0, metrics_port=0, keys_file=keys_path, grace_s=1)
    controller = ControllerSettings(policy="rules")
    slow_reader = SlowReader(memory)
    handle = slow = None
    try:
        handle = loop.run(build_server(memory, settings, controller_settings=controller,
                                       turn_limits=TurnLimits()))
        slow = loop.run(build_server(slow_reader, settings.model_copy(
            update={"metrics_port": None}), controller_settings=controller,
            turn_limits=TurnLimits()))
        yield Service(handle, slow, slow_reader, keys, loop, memory)
    finally:
        for h in (handle, slow):
            if h is not None:
                loop.run(h.stop(0))
        loop.close()
        memory.close()


@pytest.fixture
def run(service: Service):
    """Run a coroutine (an async client's calls) on a fresh loop in this thread."""
    return asyncio.run
