"""``memstrata serve`` with ``MEMSTRATA_WORKERS_BACKEND=ray``: builds and answers on Ray.

The query service finds :func:`start_service_workers` through the
``memstrata.executors`` entry point (``service_workers``) and calls it once the
server is up. With the ``local`` backend it does nothing. With ``ray`` it
connects to the cluster (an unreachable address stops start-up, naming it),
routes L1/L2 builds to the materializers, and gives the servicer a rollout pool
for Answer and AnswerStream. The actors read memory through a loopback-only
gRPC service over the same memory, with one internal key per tenant the keys
file knows (embedded stores), or open the server stores read-only.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from contextlib import ExitStack

from prometheus_client import CollectorRegistry

from memstrata.config import Config, defaults
from memstrata.executor import RolloutHost, ServiceWorkersHook
from memstrata.layers.executor import LocalLayerExecutor
from memstrata.kafka import KafkaSettings
from memstrata.roles import HostedMemory
from workers.materialize import RayLayerExecutor, SettingsBuilder, attach
from workers.metrics import WorkersMetrics
from workers.readers import ReaderSpec, StoreReaderSpec, serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings

log = logging.getLogger(__name__)


class ServiceWorkers:
    """What :func:`start_service_workers` set up; ``close()`` undoes it."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.metrics: WorkersMetrics | None = None
        self.layers: RayLayerExecutor | None = None
        self.rollouts: RayRolloutExecutor | None = None
        #: The pre-warm consumer's stop event and thread (PREWARM != off and a broker).
        self.prewarm_stop: threading.Event | None = None
        self.prewarm_thread: threading.Thread | None = None
        #: This process started its own local Ray (empty address): shut it down on close.
        self.started_ray = False

    def close(self) -> None:
        if self.prewarm_stop is not None and self.prewarm_thread is not None:
            self.prewarm_stop.set()
            self.prewarm_thread.join(10)
        for part in (self.rollouts, self.layers):
            if part is not None:
                try:
                    if part is self.layers:  # detached ones are shared with other replicas
                        self.layers.close(kill=not self.layers.settings.ray_address)
                    else:
                        part.close()
                except Exception as exc:  # noqa: BLE001 - the cluster may be gone already
                    log.warning("closing Ray workers: %s", exc)
        self.stack.close()
        if self.started_ray:
            import ray

            ray.shutdown()


def start_service_workers(memory: HostedMemory, servicer: RolloutHost, tenants: set[str],
                          registry: CollectorRegistry | None = None,
                          config: Config | None = None) -> ServiceWorkers | None:
    """Hook the Ray workers into a running service (None with the ``local`` backend).

    ``config`` is the entry point's loaded configuration (``MEMSTRATA_WORKERS_*``,
    ``MEMSTRATA_KAFKA_*`` for pre-warming); without it the defaults apply (no Ray).
    """
    from memstrata.store.factory import embedded_backends

    settings = config.get(WorkersSettings) if config else defaults(WorkersSettings)
    kafka = config.get(KafkaSettings) if config else defaults(KafkaSettings)
    if settings.backend != "ray":
        return start_prewarm(ServiceWorkers(), memory, settings, registry, kafka)
    import ray

    out = ServiceWorkers()
    out.started_ray = not ray.is_initialized() and not settings.ray_address
    try:
        out.metrics = WorkersMetrics(registry=registry)
        # The builder version is in the actors' names: detached materializers left by a
        # deployment with another builder are never asked to build for this one.
        tag = hashlib.sha256(memory.builder.version.encode()).hexdigest()[:10]
        out.layers = RayLayerExecutor(settings, metrics=out.metrics,
                                      builder_factory=SettingsBuilder(memory.settings),
                                      fallback=LocalLayerExecutor(memory.builder),
                                      name_prefix=f"memstrata-materializer-{tag}")
        attach(memory, out.layers, out.metrics)
        reader: ReaderSpec
        if embedded_backends(memory.settings):
            reader = out.stack.enter_context(serve_memory(memory, tenants))
        else:
            reader = StoreReaderSpec(memory.settings)
        out.rollouts = RayRolloutExecutor(settings, reader,
                                          controller_settings=servicer.controller_settings,
                                          app_settings=memory.settings, metrics=out.metrics)
        out.rollouts.ready()
        servicer.rollouts = out.rollouts
        servicer.rollout_tenants = pool_tenants(reader, tenants, out.metrics)
    except BaseException:
        out.close()
        raise
    log.info("Ray workers: %d materializers, %d rollout actors", settings.materializers,
             len(out.rollouts.actors))
    start_prewarm(out, memory, settings, registry, kafka)
    return out


class EveryTenant(set[str]):
    """Server stores: each actor opens the stores itself, so every tenant, including one
    added to the keys file while serving, is answered by the pool."""

    def __contains__(self, tenant: object) -> bool:
        return isinstance(tenant, str)


class TenantsAtStart(set[str]):
    """Embedded stores: the actors read through the loopback read service with one key per
    tenant known at start. A tenant added later is answered in-process: said once in the
    log and counted on every answer (``memstrata_workers_rollouts_in_process``)."""

    def __init__(self, tenants: set[str], metrics: WorkersMetrics) -> None:
        super().__init__(tenants)
        self.metrics = metrics
        self.warned: set[str] = set()

    def __contains__(self, tenant: object) -> bool:
        if super().__contains__(tenant):
            return True
        if isinstance(tenant, str):
            self.metrics.skipped.labels(reason="tenant_not_in_pool").inc()
            if tenant not in self.warned and len(self.warned) < 10_000:
                self.warned.add(tenant)
                log.warning("tenant %r was added after the service started: its answers run "
                            "in this process, not on the Ray pool (embedded stores give the "
                            "actors one read key per tenant at start; restart the service "
                            "to include it)", tenant)
        return False


def pool_tenants(reader: ReaderSpec, tenants: set[str], metrics: WorkersMetrics) -> set[str]:
    """The tenants whose answers go to the Ray pool, as the servicer tests them."""
    if isinstance(reader, StoreReaderSpec):
        return EveryTenant()
    return TenantsAtStart(set(tenants), metrics)


def start_prewarm(out: ServiceWorkers, memory: HostedMemory, settings: WorkersSettings,
                  registry: CollectorRegistry | None,
                  kafka: KafkaSettings) -> ServiceWorkers | None:
    """Consume ``memstrata.l0.v1`` on a thread of its own when pre-warming is on.

    Needs the broker (``MEMSTRATA_KAFKA_BROKERS``); without one pre-warming is off,
    and the log says so. Returns ``out``, or None when nothing was started at all.
    """
    from workers.prewarm import Prewarmer, consume_l0, memory_spend, memory_warmer

    if settings.prewarm == "off":
        return out if out.rollouts is not None else None
    brokers = kafka.brokers
    if not brokers:
        log.warning("MEMSTRATA_WORKERS_PREWARM=%s needs MEMSTRATA_KAFKA_BROKERS (it reads "
                    "memstrata.l0.v1); pre-warming is off", settings.prewarm)
        return out if out.rollouts is not None else None
    metrics = out.metrics or WorkersMetrics(registry=registry)
    out.metrics = metrics
    prewarmer = Prewarmer(settings, memory_warmer(memory), spend=memory_spend(memory),
                          metrics=metrics)
    stop = threading.Event()

    def run() -> None:
        try:
            asyncio.run(consume_l0(brokers, prewarmer, stop=stop, kafka=kafka))
        except Exception as exc:  # noqa: BLE001 - pre-warming is an optimisation: log, never crash
            log.error("pre-warm consumer stopped: %s", exc)

    out.prewarm_stop = stop
    out.prewarm_thread = threading.Thread(target=run, name="memstrata-prewarm", daemon=True)
    out.prewarm_thread.start()
    log.info("pre-warming L1 (%s, %g sessions/min) from memstrata.l0.v1",
             settings.prewarm, settings.prewarm_sessions_per_min)
    return out


#: The entry point's hook, checked by mypy against the protocol the service calls it by.
_HOOK: ServiceWorkersHook = start_service_workers
