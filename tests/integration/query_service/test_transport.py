"""Message size limits on a real gRPC server on loopback.

The service limit (MEMSTRATA_SERVICE_MAX_MESSAGE_BYTES, 4 MiB by default) is
answered by the service with INVALID_ARGUMENT naming the field and the limit;
the transport's own limit sits an eighth above it, and beyond that gRPC
answers RESOURCE_EXHAUSTED with the limit in its message.
"""

from __future__ import annotations

import grpc
import pytest

from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from query_service.settings import ServiceSettings
from query_service.transport import too_large, transport_limit
from tests.integration.query_service.conftest import Service

LIMIT = ServiceSettings.model_fields["max_message_bytes"].default


def _batch(n: int, chars: int = 90_000) -> pb.IngestBatchRequest:
    return pb.IngestBatchRequest(events=[pb.TurnEvent(
        user_id="maya", session_id="s-big", message_id=f"big-{i}", role="user",
        content="x" * chars) for i in range(n)])


@pytest.fixture(scope="module")
def stub(service: Service):
    channel = grpc.insecure_channel(service.address)  # client side: no send limit
    yield pb_grpc.MemoryServiceStub(channel)
    channel.close()


def test_limits_are_set_explicitly_above_the_service_limit():
    assert LIMIT == 4 * 1024 * 1024
    assert LIMIT < transport_limit(LIMIT) <= LIMIT + LIMIT // 8 + 64 * 1024
    assert too_large(_batch(2), LIMIT) is None


def test_a_request_over_the_service_limit_names_the_field_and_the_limit(service: Service,
                                                                        stub):
    request = _batch(48)  # about 4.3 MB: over the service limit, under the transport's
    assert LIMIT < request.ByteSize() < transport_limit(LIMIT)
    with pytest.raises(grpc.RpcError) as info:
        stub.IngestBatch(request, metadata=(("x-api-key", service.keys.acme),))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = info.value.details()
    assert details.startswith("events:") and str(LIMIT) in details, details
    assert "MEMSTRATA_SERVICE_MAX_MESSAGE_BYTES" in details
    listed = stub.ListSessions(pb.ListSessionsRequest(user_id="maya"),
                               metadata=(("x-api-key", service.keys.acme),))
    assert "s-big" not in [s.session_id for s in listed.sessions]  # nothing was written


def test_a_request_over_the_transport_limit_is_refused_with_the_limit(service: Service, stub):
    request = _batch(60)  # about 5.4 MB
    assert request.ByteSize() > transport_limit(LIMIT)
    with pytest.raises(grpc.RpcError) as info:
        stub.IngestBatch(request, metadata=(("x-api-key", service.keys.acme),))
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert str(transport_limit(LIMIT)) in info.value.details(), info.value.details()
    # The server is fine afterwards.
    reply = stub.ListSessions(pb.ListSessionsRequest(user_id="maya"),
                              metadata=(("x-api-key", service.keys.acme),))
    assert reply.sessions
