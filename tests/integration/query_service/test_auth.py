"""Keys: no key, a wrong key, a revoked key are refused; a key reads its own tenant only."""

from __future__ import annotations

import grpc
import pytest

from memstrata.client import MemoryClient, RemoteError, Unauthenticated
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.model import Scope
from query_service.keys import add_key, read_keys_file, revoke_key
from tests.integration.query_service.conftest import GLOBEX_MAYA, Service
from tests.support.conversation import MAYA


@pytest.fixture(scope="module")
def stub(service: Service):
    channel = grpc.insecure_channel(service.address)
    yield pb_grpc.MemoryServiceStub(channel)
    channel.close()


@pytest.mark.parametrize("metadata,details", [
    ((), "missing API key"),
    ((("x-api-key", "msk_0000_nope"),), "invalid or revoked"),
    ((("x-api-key", "not-even-a-key"),), "invalid or revoked"),
    ((("authorization", "Bearer msk_1_2"),), "invalid or revoked"),
])
def test_missing_or_wrong_key_is_unauthenticated(stub, metadata, details):
    for call in (lambda: stub.Search(pb.SearchRequest(user_id="maya", queries=["kitten"]),
                                     metadata=metadata),
                 lambda: list(stub.AnswerStream(pb.AnswerRequest(user_id="maya", question="x"),
                                                metadata=metadata))):
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert details in info.value.details()


def test_revoked_key_is_unauthenticated(service: Service):
    with MemoryClient(service.address, api_key=service.keys.revoked) as c:
        with pytest.raises(Unauthenticated):
            c.sessions(MAYA)


def test_revocation_and_new_keys_apply_without_restart(service: Service):
    key_id, key = add_key(service.keys.path, "acme")
    with MemoryClient(service.address, api_key=key) as c:
        assert len(c.sessions(MAYA)) == 4
        revoke_key(service.keys.path, key_id)
        with pytest.raises(Unauthenticated):
            c.sessions(MAYA)


def test_keys_file_holds_hashes_only(service: Service):
    text = service.keys.path.read_text()
    for key in (service.keys.acme, service.keys.globex):
        assert key not in text and key.split("_", 2)[2] not in text
    assert all(len(e.sha256) == 64 for e in read_keys_file(service.keys.path).keys.values())


def test_bearer_header_works(stub, service: Service):
    reply = stub.ListSessions(pb.ListSessionsRequest(user_id="maya"),
                              metadata=(("authorization", f"Bearer {service.keys.acme}"),))
    assert {s.tenant_id for s in reply.sessions} == {"acme"}


def test_a_key_never_reads_another_tenants_data(service: Service, stub):
    """Both tenants have a user 'maya'; each key sees its own tenant's maya only."""
    with MemoryClient(service.address, api_key=service.keys.globex) as globex:
        assert [m.session_id for m in globex.sessions(GLOBEX_MAYA)] == ["g1-dog"]
        assert {h.session_id for h in globex.search(GLOBEX_MAYA, "kitten Pixel")} <= {"g1-dog"}
        # Tenant B's key asking for tenant A's scope: refused, never served.
        with pytest.raises(RemoteError) as info:
            globex.sessions(MAYA)
        assert info.value.code == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(RemoteError):
            globex.raw(MAYA, "s3-back-home")
    # Whatever the request and metadata say, the key decides: acme's key + globex's
    # session id finds nothing; a forged tenant header is refused.
    acme_md = (("x-api-key", service.keys.acme),)
    with pytest.raises(grpc.RpcError) as info:
        stub.ReadRaw(pb.ReadRawRequest(user_id="maya", session_id="g1-dog"), metadata=acme_md)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        stub.ListSessions(pb.ListSessionsRequest(user_id="maya"),
                          metadata=acme_md + (("x-memstrata-tenant", "globex"),))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    hits = stub.Search(pb.SearchRequest(user_id="maya", queries=["dog Biscuit fridge"]),
                       metadata=acme_md)
    assert hits.tenant_id == "acme"
    assert "g1-dog" not in {h.session_id for h in hits.hits}
    answer = stub.Answer(pb.AnswerRequest(user_id="maya", question="What is my dog called?"),
                         metadata=acme_md)
    assert "Biscuit" not in answer.answer
    assert all(s.session_id != "g1-dog" for s in answer.sources)
    assert Scope(tenant_id="acme", user_id="maya") == MAYA


def test_the_tenant_comes_from_the_key_when_the_client_names_none(service: Service, stub):
    """An empty tenant header claims nothing (the key's tenant applies); ``key_tenant``
    tells a client which tenant its key belongs to, as `--remote` commands ask."""
    with MemoryClient(service.address, api_key=service.keys.globex) as globex:
        assert globex.key_tenant() == "globex"
    with MemoryClient(service.address, api_key=service.keys.acme) as acme:
        assert acme.key_tenant() == "acme"
    reply = stub.ListSessions(pb.ListSessionsRequest(user_id="maya"),
                              metadata=(("x-api-key", service.keys.acme),
                                        ("x-memstrata-tenant", "")))
    assert {s.tenant_id for s in reply.sessions} == {"acme"}
