"""One tenant floods Search; it is shed with retry-after-ms, the other tenant is served.

A server of its own over the session's memory, with one read thread and every
read 50 ms slower (the SlowReader TEST DOUBLE), so a flood of 48 concurrent
calls with a 1.5 s deadline cannot all be served in time. Outcomes only, no
latency bounds: the flooding tenant gets RESOURCE_EXHAUSTED with a
``retry-after-ms`` hint for part of its calls; every call of the quiet tenant,
made during the flood, succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import pytest
from prometheus_client import generate_latest

from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from query_service.server import ServiceHandle, build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.integration.query_service.support import SlowReader

FLOOD = 48
DEADLINE_S = 1.5


@pytest.fixture(scope="module")
def fair_server(service: Service) -> Iterator[ServiceHandle]:
    reader = SlowReader(service.memory, delay_s=0.05)
    settings = ServiceSettings(port=0, keys_file=service.keys.path, grace_s=0, read_threads=1,
                               scheduler="fair")
    handle = service.loop.run(build_server(
        reader, settings, controller_settings=ControllerSettings(policy="rules"),
        start_workers=False, turn_limits=TurnLimits()))
    try:
        yield handle
    finally:
        service.loop.run(handle.stop(0))


async def _search(stub: pb_grpc.MemoryServiceStub, key: str, user: str,
                  timeout: float) -> tuple[grpc.StatusCode, dict[str, str]]:
    call = stub.Search(pb.SearchRequest(user_id=user, queries=["kitten name"]),
                       metadata=(("x-api-key", key),), timeout=timeout)
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), {k: str(v) for k, v in (exc.trailing_metadata() or ())}
    return grpc.StatusCode.OK, {}


def test_a_flooding_tenant_is_shed_and_the_other_is_served(service: Service,
                                                          fair_server: ServiceHandle):
    async def scenario() -> tuple[list[tuple[grpc.StatusCode, dict[str, str]]],
                                  list[tuple[grpc.StatusCode, dict[str, str]]]]:
        async with grpc.aio.insecure_channel(fair_server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            for _ in range(3):  # the scheduler learns the service time
                assert (await _search(stub, service.keys.acme, "maya", 30))[0] == \
                    grpc.StatusCode.OK
            flood = [asyncio.ensure_future(_search(stub, service.keys.acme, "maya", DEADLINE_S))
                     for _ in range(FLOOD)]
            quiet = []
            for _ in range(4):  # one at a time, while the flood is queued
                quiet.append(await _search(stub, service.keys.globex, "maya", 30))
            return list(await asyncio.gather(*flood)), quiet

    flood, quiet = asyncio.run(scenario())
    assert [code for code, _ in quiet] == [grpc.StatusCode.OK] * 4
    shed = [meta for code, meta in flood if code == grpc.StatusCode.RESOURCE_EXHAUSTED]
    assert shed, [code for code, _ in flood]
    assert all(int(meta["retry-after-ms"]) > 0 for meta in shed)
    assert {code for code, _ in flood} <= {grpc.StatusCode.OK,
                                           grpc.StatusCode.RESOURCE_EXHAUSTED,
                                           grpc.StatusCode.DEADLINE_EXCEEDED}
    text = generate_latest(fair_server.metrics.registry).decode()
    assert 'memstrata_shed_calls_total{method="Search",reason="deadline"}' in text
    assert 'memstrata_concurrency_limit{pool="read"} 1.0' in text
    assert 'memstrata_queue_wait_seconds_count{method="Search"}' in text
