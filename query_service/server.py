"""Build, start and stop the gRPC server; usable on any running asyncio loop.

``build_server`` returns a started :class:`ServiceHandle` (tests use port 0);
``run_server`` runs until its stop event is set, then shuts down gracefully:
health flips to NOT_SERVING, new calls are refused, in-flight calls get
``grace_s`` to finish. ``memstrata serve`` and ``memstrata up`` call these on
their own loop, so the stream worker and the service can share one process
(the embedded stores admit one writer).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from memstrata.client._proto import memory_pb2 as pb
from memstrata.client._proto import memory_pb2_grpc as pb_grpc
from memstrata.controller.config import ControllerSettings, load_controller_settings
from memstrata.llm.metrics import register_llm_metrics
from memstrata.llm.usage import PriceTable
from query_service.interceptors import AuthInterceptor, LimitsInterceptor, MetricsInterceptor
from query_service.keys import KeyRing
from query_service.limits import SpendLedger, TenantGate
from query_service.metrics import ServiceMetrics
from query_service.publish import KafkaProducerSettings, KafkaPublisher, TurnPublisher
from query_service.servicer import MemoryServicer
from query_service.settings import ServiceSettings
from query_service.work import Pools

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MemoryService"].full_name


@dataclass
class ServiceHandle:
    """A running service: its server, bound port and the parts tests look at."""

    server: grpc.aio.Server
    port: int
    servicer: MemoryServicer
    metrics: ServiceMetrics
    health: HealthServicer
    pools: Pools
    publisher: TurnPublisher | None
    metrics_http: Any = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def stop(self, grace: float | None = 5.0) -> None:
        """Flip health to NOT_SERVING, stop accepting, let in-flight calls finish."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        if self.publisher is not None:
            await self.publisher.stop()
        if self.metrics_http is not None:
            self.metrics_http.shutdown()
        self.pools.shutdown()


def _open_chat(memory: Any, controller_settings: ControllerSettings) -> Any:
    if controller_settings.policy == "rules":
        return None
    from memstrata.controller.run import open_chat_client

    settings = getattr(memory, "settings", None)
    if settings is None or settings.llm_backend != "openai":
        return None
    try:
        return open_chat_client(memory)  # main: takes the memory
    except AttributeError:
        return open_chat_client(settings, getattr(memory, "meter", None))  # type: ignore[call-arg]


def spend_path(memory: Any, settings: ServiceSettings) -> Path:
    """The spend file: the setting, else beside the data the service serves."""
    if settings.spend_file is not None:
        return settings.spend_file
    return Path(memory.settings.data_dir) / "service" / "spend.json"


async def build_server(
    memory: Any,
    settings: ServiceSettings | None = None,
    *,
    controller_settings: ControllerSettings | None = None,
    publisher: TurnPublisher | None = None,
    kafka: KafkaProducerSettings | None = None,
    chat: Any = None,
    prices: PriceTable | None = None,
) -> ServiceHandle:
    """Start a server over ``memory`` (a :class:`~memstrata.memory.Memory`) and return it.

    The turn publisher is Kafka when ``MEMSTRATA_KAFKA_BROKERS`` is set (or
    ``publisher`` is given); otherwise Ingest writes to ``memory`` directly.
    """
    settings = settings or ServiceSettings()
    controller_settings = controller_settings or load_controller_settings()
    metrics = ServiceMetrics(tenant_label=settings.metrics_tenant_label)
    keys = KeyRing(settings.keys_file)
    gate = TenantGate(settings, keys)
    pools = Pools(settings.read_threads, settings.answer_threads,
                  on_abandoned=lambda method, reason: metrics.abandoned.labels(
                      method=method, reason=reason).inc())
    if publisher is None:
        kafka = kafka or KafkaProducerSettings()
        if kafka.brokers:
            publisher = KafkaPublisher(kafka.brokers, kafka.topic_turns, kafka.stream_group)
    if chat is None:
        chat = _open_chat(memory, controller_settings)
    # memstrata_llm_fallbacks_total: builds and answers the LLM failed to do.
    register_llm_metrics(metrics.registry, getattr(memory, "meter", None),
                         getattr(chat, "meter", None))
    servicer = MemoryServicer(memory, settings, controller_settings, chat, pools, metrics,
                              gate, SpendLedger(spend_path(memory, settings)), publisher,
                              prices)
    server = grpc.aio.server(interceptors=[MetricsInterceptor(metrics), AuthInterceptor(keys),
                                           LimitsInterceptor(gate, metrics)],
                             options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_MemoryServiceServicer_to_server(servicer, server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME), server)
    address = f"{settings.host}:{settings.port}"
    if settings.tls_cert is not None and settings.tls_key is not None:
        creds = grpc.ssl_server_credentials(
            [(settings.tls_key.read_bytes(), settings.tls_cert.read_bytes())])
        port = server.add_secure_port(address, creds)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    handle = ServiceHandle(server, port, servicer, metrics, health, pools, publisher)
    try:
        if publisher is not None:
            await publisher.start()
        await asyncio.get_running_loop().run_in_executor(
            pools.read, lambda: memory.sessions(_probe_scope()))  # the stores answer
        if settings.metrics_port is not None:
            handle.metrics_http = metrics.serve_http(settings.metrics_port, settings.host)
    except BaseException:
        await handle.stop(0)
        raise
    for name in ("", SERVICE_NAME):
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("memstrata query service listening on %s:%d (%s)", settings.host, port,
             "TLS" if settings.tls_cert else "plaintext")
    return handle


def _probe_scope() -> Any:
    from memstrata.model import Scope

    return Scope(tenant_id="_health", user_id="_probe")


async def run_server(memory: Any, settings: ServiceSettings | None = None, *,
                     stop: asyncio.Event | None = None, handle_signals: bool = True,
                     **kwargs: Any) -> None:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT), then shut down gracefully."""
    settings = settings or ServiceSettings()
    stop = stop or asyncio.Event()
    handle = await build_server(memory, settings, **kwargs)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if handle_signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
            except (NotImplementedError, RuntimeError):  # not the main thread
                pass
    try:
        await stop.wait()
    finally:
        log.info("shutting down: finishing in-flight calls (grace %.0f s)", settings.grace_s)
        for sig in installed:
            loop.remove_signal_handler(sig)
        await handle.stop(settings.grace_s)


def as_loop_service(settings: ServiceSettings | None = None,
                    **kwargs: Any) -> Callable[[Any], Awaitable[None]]:
    """The service as a coroutine factory for another component's loop.

    ``memstrata up`` runs extra services on the stream worker's loop over the
    worker's own memory (``StreamRuntime(services=[as_loop_service(...)])``): the
    embedded stores admit one writer, so the gRPC server shares the worker's
    process and memory. Cancelling the task stops the server gracefully.
    """

    async def service(memory: Any) -> None:
        await run_server(memory, settings, handle_signals=False, **kwargs)

    return service
