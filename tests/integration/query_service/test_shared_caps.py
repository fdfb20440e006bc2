"""Two servers over one OpenSearch ledger: a tenant's concurrency cap holds across both (issue 37).

Both servers read through one SlowReader (a TEST DOUBLE around the real memory
that sleeps in each read), so every admitted call stays in flight long enough
to overlap the others; the reader counts the reads sleeping at once.
"""

from __future__ import annotations

import threading
import time

import grpc
import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from memstrata.model import Scope, Session
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from query_service.keys import TenantPolicy, add_key, set_tenant_policy
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.integration.query_service.support import SlowReader
from tests.support.conversation import sessions as maya_sessions

CAP, CALLS = 3, 12


@pytest.mark.integration
def test_calls_in_flight_across_two_replicas_stay_within_the_tenants_cap(
        service: Service, osmem_clone) -> None:
    """Stated error: none over the cap while the ledger answers (ledger_caps)."""
    keys = service.keys.path
    key = add_key(keys, "capped")[1]
    set_tenant_policy(keys, "capped", TenantPolicy(rate_per_s=1000, burst=1000,
                                                   max_concurrent=CAP))
    first = maya_sessions()[0]
    service.memory.ingest([Session(meta=first.meta.model_copy(
        update={"scope": Scope(tenant_id="capped", user_id="maya")}), turns=first.turns)])
    reader = SlowReader(service.memory, delay_s=0.5)
    settings = ServiceSettings(port=0, keys_file=keys, ledger="opensearch",
                               ledger_url=osmem_clone.url, refusal_hold_max_s=0,
                               read_threads=2 * CAP)
    handles = [service.loop.run(build_server(
        reader, settings, controller_settings=ControllerSettings(policy="rules"),
        turn_limits=TurnLimits())) for _ in range(2)]
    channels = [grpc.insecure_channel(h.address) for h in handles]
    peak, done = [0], threading.Event()

    def watch() -> None:  # the most reads in flight at once, sampled every 5 ms
        while not done.wait(0.005):
            peak[0] = max(peak[0], reader.busy)

    codes: list[grpc.StatusCode] = []
    start = threading.Barrier(CALLS)

    def call(i: int) -> None:
        stub = pb_grpc.MemoryServiceStub(channels[i % 2])
        start.wait()
        try:
            stub.ListSessions(pb.ListSessionsRequest(user_id="maya"),
                              metadata=(("x-api-key", key),), timeout=10)
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as exc:
            assert "concurrency limit of 3 calls in flight" in (exc.details() or "")
            codes.append(exc.code())

    try:
        for c in channels:  # connect first, so the calls start together
            grpc.channel_ready_future(c).result(timeout=10)
        watcher = threading.Thread(target=watch)
        watcher.start()
        threads = [threading.Thread(target=call, args=(i,)) for i in range(CALLS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        done.set()
        watcher.join()
        assert len(codes) == CALLS
        assert peak[0] == CAP, peak  # per replica it would be 2 * CAP
        assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) >= CALLS - 2 * CAP, codes
        time.sleep(0.05)
    finally:
        for c in channels:
            c.close()
        for h in handles:
            service.loop.run(h.stop(0))
