"""``ExportUser`` over a real gRPC server: what a local export reads, scoped by the key's tenant.

The sync and async clients both receive exactly the sessions the local export
functions read from the doc store (turns and layer records); a whole-tenant
export names every user of the key's tenant and nothing of another tenant; a
key of another tenant is refused; an unknown user is NOT_FOUND; a session
larger than one chunk comes back whole, and a stream cut inside a session is
an error, never a shorter session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from memstrata.client import AsyncMemoryClient, MemoryClient, RemoteError
from memstrata.client.errors import RemoteSessionNotFound
from memstrata.controller.config import ControllerSettings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.lifecycle.export import read_session
from memstrata.limits import TurnLimits
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.rpc.export import chunks_of, sessions_from_chunks
from query_service.keys import add_key
from query_service.server import ServiceHandle, build_server
from query_service.settings import ServiceSettings
from tests.integration.lifecycle.support import ACME_MAYA, build_history, open_memory
from tests.integration.query_service.support import LoopThread


class Served:
    def __init__(self, memory: Memory, handle: ServiceHandle, keys: dict[str, str]) -> None:
        self.memory, self.handle, self.keys = memory, handle, keys

    def client(self, tenant: str) -> MemoryClient:
        return MemoryClient(self.handle.address, api_key=self.keys[tenant])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory,
           embedder: MiniLMEmbedder) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("export-rpc")
    memory = open_memory(tmp / "data", embedder)
    build_history(memory)
    keys_path = tmp / "keys.json"
    keys = {t: add_key(keys_path, t)[1] for t in ("acme", "globex")}
    loop = LoopThread()
    handle = None
    try:
        handle = loop.run(build_server(
            memory, ServiceSettings(port=0, keys_file=keys_path, grace_s=1),
            controller_settings=ControllerSettings(policy="rules"), turn_limits=TurnLimits(),
            start_workers=False))
        yield Served(memory, handle, keys)
    finally:
        if handle is not None:
            loop.run(handle.stop(0))
        loop.close()
        memory.close()


def local(memory: Memory, scope: Scope) -> list:
    return [read_session(memory.docs, m, layers=True) for m in memory.docs.list_sessions(scope)]


def test_a_user_exported_through_the_service_equals_the_local_read(served: Served) -> None:
    with served.client("acme") as client:
        remote = list(client.export_user("acme", "maya", layers=True))
    expected = local(served.memory, ACME_MAYA)
    assert len(remote) == len(expected) == 2
    for got, want in zip(remote, expected):
        assert (got.meta, got.turns, got.layers) == (want.meta, want.turns, want.layers)

    async def via_aio() -> list:
        async with AsyncMemoryClient(served.handle.address, api_key=served.keys["acme"]) as c:
            return [s async for s in c.export_user("acme", "maya", layers=True)]

    aio = asyncio.run(via_aio())
    assert [(s.meta, s.turns, s.layers) for s in aio] == [
        (s.meta, s.turns, s.layers) for s in expected]


def test_a_whole_tenant_is_the_keys_tenant_only(served: Served,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import query_service.servicer

    monkeypatch.setattr(query_service.servicer, "USERS_PAGE", 3)  # the users cross pages
    with served.client("globex") as client:
        sessions = list(client.export_user("globex"))
        assert {(s.meta.scope.tenant_id, s.meta.scope.user_id) for s in sessions} == {
            ("globex", "maya")}
        assert [s.meta.session_id for s in sessions] == ["g1-dog"]
        with pytest.raises(RemoteError, match="PERMISSION_DENIED"):
            list(client.export_user("acme", "maya"))
        with pytest.raises(RemoteError, match="PERMISSION_DENIED"):
            list(client.export_user("acme"))
    with served.client("acme") as client:
        users = [s.meta.scope.user_id for s in client.export_user("acme")]
        assert sorted(set(users)) == served.memory.docs.list_users("acme")
        assert len(set(users)) == 10 and users == sorted(users)  # in user id order, each once
        assert len(users) == sum(len(served.memory.docs.list_sessions(
            Scope(tenant_id="acme", user_id=u))) for u in set(users))
        with pytest.raises(RemoteSessionNotFound, match="no memory for user 'nobody'"):
            list(client.export_user("acme", "nobody"))


def test_a_large_session_travels_in_chunks_and_comes_back_whole(served: Served) -> None:
    session = local(served.memory, ACME_MAYA)[0]
    chunks = list(chunks_of(session, max_bytes=300))
    assert len(chunks) > 3 and [c.last for c in chunks].count(True) == 1 and chunks[-1].last
    (back,) = list(sessions_from_chunks(chunks))
    assert (back.meta, back.turns, back.layers) == (session.meta, session.turns, session.layers)
    with pytest.raises(ValueError, match="ended inside session"):
        list(sessions_from_chunks(chunks[:-1]))
