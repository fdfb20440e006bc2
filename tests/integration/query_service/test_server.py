"""Health checking, reflection, TLS, and slow answers that must not stall reads."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from memstrata.client import MemoryClient
from memstrata.client.settings import ClientSettings
from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from query_service.server import SERVICE_NAME, build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.support.conversation import ASKED_ON, MAYA
from tests.support.waiting import wait_for


def test_health_is_serving_and_needs_no_key(service: Service):
    with grpc.insecure_channel(service.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE_NAME):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_the_query_encoder_is_loaded_before_the_first_call(service: Service):
    """Start-up searches once (the health probe's scope): no caller pays the encoder's
    load, and the scheduler's service-time estimate does not start from it."""
    from query_service.server import _probe_scope

    probe = _probe_scope()
    cache = service.memory.retriever.query_vectors  # type: ignore[attr-defined]
    assert any(k[:2] == (probe.tenant_id, probe.user_id) for k in cache._vectors)


def test_reflection_lists_the_service(service: Service):
    with grpc.insecure_channel(service.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([
            reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert {"memstrata.v1.MemoryService", "grpc.health.v1.Health"} <= names


def test_slow_answers_do_not_stall_search(service: Service):
    """Every answer slot the tenant may take busy with slow answers; a Search still
    answers at once.

    "At once" is judged against the slow read, not against a tight clock: a Search
    queued behind an answer would wait for at least one whole slow read (DELAY_S).
    The tenant's slots are the answer pool's limit (its threads less the spare one,
    which a tenant with answers running may not take).
    """
    delay_s = 1.5
    slow = service.slow_reader
    answers = service.slow.pools.schedulers[service.slow.pools.answer]
    slow.delay_s, slow.fast = delay_s, {"search"}
    try:
        with MemoryClient(service.slow.address, api_key=service.keys.acme) as c:
            threads = [threading.Thread(target=c.answer, args=(MAYA, "Where did I get promoted?",
                                                               ASKED_ON)) for _ in range(3)]
            for t in threads:
                t.start()
            wait_for(lambda: slow.busy >= answers.limiter.value, 30,
                     "every answer slot of the tenant in a slow read")
            t0 = time.monotonic()
            hits = c.search(MAYA, "kitten name")
            elapsed = time.monotonic() - t0
            assert hits and elapsed < delay_s, f"search waited {elapsed:.2f} s behind answers"
            slow.delay_s = 0.0  # let the answers finish
            for t in threads:
                t.join()
    finally:
        slow.delay_s, slow.fast = 0.0, set()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return d / "cert.pem", d / "key.pem"


def test_tls(service: Service, certs: tuple[Path, Path]):
    cert, key = certs
    settings = ServiceSettings(port=0, keys_file=service.keys.path, tls_cert=cert, tls_key=key)
    handle = service.loop.run(build_server(service.memory, settings,
                                           controller_settings=ControllerSettings(policy="rules"),
                                           turn_limits=TurnLimits()))
    try:
        with MemoryClient(handle.address, api_key=service.keys.acme,
                          settings=ClientSettings(ca_file=cert)) as c:
            assert len(c.sessions(MAYA)) == 4
        with MemoryClient(handle.address, api_key=service.keys.acme, timeout_s=2,
                          settings=ClientSettings()) as plain:
            with pytest.raises(Exception) as info:
                plain.sessions(MAYA)
            assert getattr(info.value, "code", None) == grpc.StatusCode.UNAVAILABLE
    finally:
        service.loop.run(handle.stop(0))


def test_tls_settings_come_in_pairs():
    with pytest.raises(ValueError, match="TLS_CERT and MEMSTRATA_SERVICE_TLS_KEY"):
        ServiceSettings(tls_cert=Path("/x.pem"))


def test_graceful_stop_finishes_in_flight_calls(service: Service):
    """Stopping with a grace period: the call in flight completes, new calls are refused."""
    from tests.integration.query_service.support import SlowReader

    reader = SlowReader(service.memory, delay_s=0.1)
    settings = ServiceSettings(port=0, keys_file=service.keys.path)
    handle = service.loop.run(build_server(reader, settings,
                                           controller_settings=ControllerSettings(policy="rules"),
                                           turn_limits=TurnLimits()))
    results: list[object] = []
    started = reader.reads  # the server's own start-up probe reads too
    with MemoryClient(handle.address, api_key=service.keys.acme) as c:
        t = threading.Thread(target=lambda: results.append(
            c.answer(MAYA, "What is the name of my kitten?", ASKED_ON)))
        t.start()
        wait_for(lambda: reader.reads > started, 30, "the answer is running")
        service.loop.run(handle.stop(grace=10))
        t.join(10)
        assert results and getattr(results[0], "answer", None) == "Pixel"
        with pytest.raises(Exception):
            c.sessions(MAYA)


def test_logs_hold_no_keys_and_no_content(service: Service, caplog: pytest.LogCaptureFixture):
    import logging

    caplog.set_level(logging.INFO)
    with MemoryClient(service.address, api_key=service.keys.acme) as c:
        c.answer(MAYA, "What is the name of my kitten?", ASKED_ON)
        with pytest.raises(Exception):
            c.search(MAYA, "x" * 5000)
    with MemoryClient(service.address, api_key=service.keys.acme + "tampered") as bad:
        with pytest.raises(Exception):
            bad.sessions(MAYA)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused a call" in text  # something was logged
    for secret in (service.keys.acme, "kitten", "Pixel", "xxxxx"):
        assert secret not in text


def test_the_server_runs_as_a_task_on_another_loop_and_stops_when_cancelled(service: Service):
    """How `memstrata up` hosts it: a task on the stream worker's loop, cancelled at stop."""
    import asyncio
    import contextlib
    import socket

    from memstrata.client import AsyncMemoryClient
    from query_service.server import as_loop_service

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    factory = as_loop_service(ServiceSettings(port=port, keys_file=service.keys.path),
                              controller_settings=ControllerSettings(policy="rules"),
                              turn_limits=TurnLimits())

    async def scenario() -> tuple[int, str]:
        task = asyncio.ensure_future(factory(service.memory))
        async with AsyncMemoryClient(f"127.0.0.1:{port}", api_key=service.keys.acme,
                                     timeout_s=5) as c:
            for _ in range(100):
                try:
                    n = len(await c.sessions(MAYA))
                    break
                except Exception:
                    await asyncio.sleep(0.05)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            try:
                await c.sessions(MAYA)
                after = "still serving"
            except Exception as exc:
                after = type(exc).__name__
        return n, after

    n, after = service.loop.run(scenario())
    assert n == 4 and after == "Unavailable"  # a RemoteError for UNAVAILABLE
