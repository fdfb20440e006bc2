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
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from memstrata.controller.config import ControllerSettings
from memstrata.executor import Closable
from memstrata.limits import TurnLimits
from memstrata.llm.metrics import register_llm_metrics
from memstrata.process_memory import register_cache_metrics
from memstrata.redact.metrics import register_redaction_metrics
from memstrata.llm.usage import PriceTable
from memstrata.model import Scope
from memstrata.roles import HostedMemory
from memstrata.rpc import memory_pb2 as pb
from memstrata.rpc import memory_pb2_grpc as pb_grpc
from query_service.controls import TopicControls
from query_service.interceptors import CallInterceptor
from query_service.interceptors.refusals import RefusalPacer
from query_service.audit import AUDIT_FILE, AuditLog
from query_service.keys import KeyRing
from query_service.ledger_select import open_ledgers
from query_service.limits import TenantGate
from query_service.metrics import ServiceMetrics
from memstrata.config import Config, defaults
from memstrata.kafka import KafkaSettings
from memstrata.telemetry.grpc import server_interceptors
from query_service.publish import (
    KafkaPublisher,
    StoredOffsets,
    StoredPublisher,
    TurnPublisher,
)
from query_service.servicer import MemoryServicer
from query_service.settings import ServiceSettings
from query_service.transport import channel_options
from query_service.work import Pools, build_pools

if TYPE_CHECKING:
    from memstrata.llm.openai_compat import ChatClient

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MemoryService"].full_name


class BindError(OSError):
    """The server cannot listen on its address: the port is taken or the host is not local."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        super().__init__(f"cannot listen on {host}:{port}: {bind_problem(host, port)}")


def bind_problem(host: str, port: int) -> str:
    """Why ``host:port`` cannot be bound, in words ("the port is in use", ...), or ''."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"the host does not resolve ({exc.strerror or exc})"
    family, _, _, _, sockaddr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpc binds
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "the port is in use by another process"
            if exc.errno == errno.EADDRNOTAVAIL:
                return "the host is not an address of this machine"
            if exc.errno == errno.EACCES:
                return "permission denied (ports below 1024 need privileges)"
            return exc.strerror or str(exc)
    return ""


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
    #: The /metrics HTTP server (``shutdown()`` stops it); None: not served.
    metrics_http: Any = None
    #: The Ray workers (``MEMSTRATA_WORKERS_BACKEND=ray``); None: everything in-process.
    workers: Closable | None = None
    #: Kafka mode's route for closes and deletes (``query_service.controls``).
    controls: TopicControls | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def stop(self, grace: float | None = 5.0) -> None:
        """Flip health to NOT_SERVING, stop accepting, let in-flight calls finish."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        self.servicer.close()
        # Unspent budget slices go back to the shared ledger (query_service.ledger_lease).
        await asyncio.get_running_loop().run_in_executor(None, self.servicer.ledger.close)
        # Leased concurrency slots too (query_service.ledger_caps).
        await asyncio.get_running_loop().run_in_executor(None, self.servicer.gate.close)
        if self.publisher is not None:
            await self.publisher.stop()
        if self.controls is not None:
            await self.controls.stop()
        if self.metrics_http is not None:
            self.metrics_http.shutdown()
        self.pools.shutdown()
        if self.workers is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.workers.close)


def _start_workers(memory: HostedMemory, servicer: MemoryServicer, keys: KeyRing,
                   metrics: ServiceMetrics, config: Config | None) -> Closable | None:
    """The Ray workers when the ``workers`` package is installed (it decides by its settings)."""
    from memstrata.executor import find_backend

    try:
        start = find_backend("service_workers")
    except LookupError:
        return None
    return start(memory, servicer, keys.tenants, registry=metrics.registry, config=config)


def _warm_up(memory: HostedMemory) -> None:
    """One search, so the encoder and the stores' readers are loaded before serving.

    A read only (of the health probe's scope, which holds nothing); its result is dropped.
    """
    try:
        memory.search(_probe_scope(), "warm up")
    except Exception as exc:  # noqa: BLE001 - the first real call reports it properly
        log.warning("warm-up search failed (the first Search will load the encoder): %s", exc)


def _open_chat(memory: HostedMemory,
               controller_settings: ControllerSettings) -> ChatClient | None:
    """The answer LLM the memory's settings name; None with the rules policy or offline."""
    if controller_settings.policy == "rules":
        return None
    from memstrata.controller.run import open_chat_client

    return open_chat_client(memory.settings, memory.meter)


def audit_path(memory: HostedMemory, settings: ServiceSettings) -> Path:
    """The audit log: the setting, else in the data dir of the memory the service serves."""
    if settings.audit_file is not None:
        return settings.audit_file
    return Path(memory.settings.data_dir) / AUDIT_FILE


def spend_path(memory: HostedMemory, settings: ServiceSettings) -> Path:
    """The spend file: the setting, else beside the data the service serves."""
    if settings.spend_file is not None:
        return settings.spend_file
    return Path(memory.settings.data_dir) / "service" / "spend.json"


async def build_server(
    memory: HostedMemory,
    settings: ServiceSettings,
    *,
    controller_settings: ControllerSettings | None = None,
    publisher: TurnPublisher | None = None,
    kafka: KafkaSettings | None = None,
    stored: StoredOffsets | None = None,
    chat: ChatClient | None = None,
    prices: PriceTable | None = None,
    extra_metrics: Sequence[CollectorRegistry] = (),
    start_workers: bool = True,
    turn_limits: TurnLimits,
    config: Config | None = None,
) -> ServiceHandle:
    """Start a server over ``memory`` (a :class:`~memstrata.memory.Memory`) and return it.

    ``memory`` is seen through :class:`~memstrata.roles.HostedMemory`: the roles,
    its settings (the answer models, the spend file), its meter and its stores
    (the start-up check), and the seams the workers hook plugs into.

    Settings come from the caller (the entry point's :func:`memstrata.config.load_config`);
    a missing ``controller_settings`` means the defaults, never the environment.
    The turn publisher is Kafka when ``kafka`` names brokers (or ``publisher`` is
    given); otherwise Ingest writes to ``memory`` directly. ``config`` is handed to
    the workers hook, which reads its own namespace from it.
    ``stored`` is the in-process stream worker's progress (embedded broker): Ingest
    then answers once the worker has stored the turns (``MEMSTRATA_SERVICE_INGEST_ACK``).
    ``extra_metrics`` are served on the same /metrics port. ``turn_limits`` are the
    ``MEMSTRATA_TURN_*`` limits Ingest applies (the stream worker's, when serve hosts it).
    """
    controller_settings = controller_settings or defaults(ControllerSettings)
    app = memory.settings  # the answer models' cost series start at 0
    metrics = ServiceMetrics(tenant_label=settings.metrics_tenant_label, models=[
        app.llm_model_controller, app.llm_model_synthesizer, app.llm_model_generator])
    for registry in extra_metrics:  # e.g. the stream worker's, when serve hosts it
        metrics.include(registry)
    keys = KeyRing(settings.keys_file)
    spend, shared_rate, caps = open_ledgers(settings, memory.settings,
                                            spend_path(memory, settings))
    gate = TenantGate(settings, keys, shared=shared_rate, caps=caps)
    pacer = RefusalPacer(settings.refusal_hold_max_s, settings.refusals_held_max,
                         settings.refusal_rate_per_s)
    # One pacer for the limits' refusals and the scheduler's: a tenant's share its pace.
    pools = build_pools(settings, metrics, weight_of=gate.weight, pacer=pacer,
                        rate_of=lambda tenant: gate.limits(tenant).rate_per_s)
    if publisher is None and kafka is not None and kafka.brokers:
        if stored is not None and settings.ingest_ack == "stored":
            publisher = StoredPublisher(kafka, stored, wait_s=settings.ingest_wait_s)
        else:
            publisher = KafkaPublisher(kafka)
    if chat is None:
        chat = _open_chat(memory, controller_settings)
    # memstrata_llm_fallbacks_total: builds and answers the LLM failed to do.
    register_llm_metrics(metrics.registry, memory.meter,
                         getattr(chat, "meter", None))  # a scripted chat may have none
    # memstrata_redactions_total{tenant,kind}: once, if serve's stream worker has not already.
    register_redaction_metrics(metrics.registry, memory, included=extra_metrics)
    # memstrata_process_cache_entries{cache}: the process caches' fill against their bound.
    register_cache_metrics(metrics.registry, included=extra_metrics)
    servicer = MemoryServicer(memory, settings, controller_settings, chat, pools, metrics,
                              gate, spend, publisher,
                              prices, turn_limits=turn_limits)
    servicer.audit = audit = AuditLog(audit_path(memory, settings))
    # The trace span interceptor first (tracing on only), so its span covers the others.
    server = grpc.aio.server(interceptors=[*server_interceptors(),
                                           CallInterceptor(metrics, keys, gate,
                                                           settings.max_message_bytes,
                                                           pacer, audit)],
                             options=[("grpc.so_reuseport", 0),
                                      *channel_options(settings.max_message_bytes)])
    pb_grpc.add_MemoryServiceServicer_to_server(servicer, server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME), server)
    address = f"{settings.host}:{settings.port}"
    try:
        if settings.tls_cert is not None and settings.tls_key is not None:
            ca = settings.tls_client_ca.read_bytes() if settings.tls_client_ca else None
            creds = grpc.ssl_server_credentials(
                [(settings.tls_key.read_bytes(), settings.tls_cert.read_bytes())],
                root_certificates=ca, require_client_auth=ca is not None)
            port = server.add_secure_port(address, creds)
        else:
            port = server.add_insecure_port(address)
    except RuntimeError:  # newer grpcio raises where older ones returned 0
        port = 0
    if port == 0:
        raise BindError(settings.host, settings.port)
    # Before the first call: a fresh server's first Search would pay the query
    # encoder's load (seconds), and the fair scheduler's service-time estimate,
    # seeded by that one outlier, would shed the first burst of calls as "would
    # wait past the queue limit" for the next hundred or so.
    await asyncio.get_running_loop().run_in_executor(pools.read, _warm_up, memory)
    await server.start()
    handle = ServiceHandle(server, port, servicer, metrics, health, pools, publisher)
    try:
        if publisher is not None:
            await publisher.start()
        if isinstance(publisher, KafkaPublisher) and publisher.durability == "broker":
            # Kafka mode: the stream workers own the writes; closes and deletes follow
            # the turns through memstrata.control.v1 (query_service.controls).
            handle.controls = servicer.controls = TopicControls(
                publisher.brokers, publisher.stream_group, kafka=publisher.kafka,
                turns_topic=publisher.topic)
            await handle.controls.start()
        await asyncio.get_running_loop().run_in_executor(
            pools.read, lambda: memory.sessions(_probe_scope()))  # the stores answer
        await asyncio.get_running_loop().run_in_executor(pools.read, _startup_totals, memory)
        if start_workers:
            handle.workers = await asyncio.get_running_loop().run_in_executor(
                None, _start_workers, memory, servicer, keys, metrics, config)
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


def _startup_totals(memory: HostedMemory) -> None:
    """The cheap part of ``memstrata check``: every L0 unit has a vector and a BM25 document.

    A mismatch is logged (with the command that names and repairs the sessions),
    not refused: the service still answers from what is there. (``memstrata
    serve`` refuses a damaged SQLite file before it gets here.)
    """
    from memstrata.check import CheckReport, check_totals

    report = CheckReport()
    try:
        check_totals(memory.docs, memory.vectors, memory.lexical, report)
    except NotImplementedError:
        return
    for f in report.findings:  # (a stream worker already writing can cause a passing one)
        log.warning("data check on start: %s", f.line())
    if report.ok:
        log.info("data check on start: %s", ", ".join(
            f"{k} {v}" for k, v in report.totals.items()))


def _probe_scope() -> Scope:
    return Scope(tenant_id="_health", user_id="_probe")


def stop_summary(handle: ServiceHandle, uptime_s: float) -> str:
    """One line for the log when the service stops: uptime, calls served, calls failed."""
    calls = failed = 0.0
    for metric in handle.metrics.latency.collect():
        calls += sum(s.value for s in metric.samples if s.name.endswith("_count"))
    for metric in handle.metrics.errors.collect():
        failed += sum(s.value for s in metric.samples if s.name.endswith("_total"))
    m, sec = divmod(int(uptime_s), 60)
    h, m = divmod(m, 60)
    took = f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"
    return f"query service stopped: ran {took}; {int(calls)} calls served, {int(failed)} failed"


async def run_server(memory: HostedMemory, settings: ServiceSettings, *,
                     stop: asyncio.Event | None = None, handle_signals: bool = True,
                     on_listening: Callable[[ServiceHandle], None] | None = None,
                     **kwargs: Any) -> None:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT), then shut down gracefully.

    ``on_listening`` is called once the server listens and answers health
    checks: announcing the address any earlier sends clients to a closed port.
    """
    stop = stop or asyncio.Event()
    handle = await build_server(memory, settings, **kwargs)
    started = time.monotonic()
    if on_listening is not None:
        on_listening(handle)
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
        try:
            await handle.stop(settings.grace_s)
        finally:
            log.info("%s", stop_summary(handle, time.monotonic() - started))


def as_loop_service(settings: ServiceSettings,
                    **kwargs: Any) -> Callable[[HostedMemory], Awaitable[None]]:
    """The service as a coroutine factory for another component's loop.

    ``memstrata up`` runs extra services on the stream worker's loop over the
    worker's own memory (``StreamRuntime(services=[as_loop_service(...)])``): the
    embedded stores admit one writer, so the gRPC server shares the worker's
    process and memory. Cancelling the task stops the server gracefully.
    """

    async def service(memory: HostedMemory) -> None:
        await run_server(memory, settings, handle_signals=False, **kwargs)

    return service
