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

import logging
from contextlib import ExitStack
from typing import Any

from memstrata.executor import LocalLayerExecutor
from workers.materialize import RayLayerExecutor, attach
from workers.metrics import WorkersMetrics
from workers.readers import ReaderSpec, StoreReaderSpec, serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import load_workers_settings

log = logging.getLogger(__name__)


class ServiceWorkers:
    """What :func:`start_service_workers` set up; ``close()`` undoes it."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.metrics: WorkersMetrics | None = None
        self.layers: RayLayerExecutor | None = None
        self.rollouts: RayRolloutExecutor | None = None
        #: This process started its own local Ray (empty address): shut it down on close.
        self.started_ray = False

    def close(self) -> None:
        for part in (self.rollouts, self.layers):
            if part is not None:
                try:
                    if part is self.layers:  # detached ones are shared with other replicas
                        self.layers.close(kill=not self.layers.settings.ray_address)
                    else:
                        part.close()
                except Exception as exc:  # the cluster may be gone already
                    log.warning("closing Ray workers: %s", exc)
        self.stack.close()
        if self.started_ray:
            import ray

            ray.shutdown()


def start_service_workers(memory: Any, servicer: Any, tenants: set[str],
                          registry: Any = None) -> ServiceWorkers | None:
    """Hook the Ray workers into a running service (None with the ``local`` backend)."""
    from memstrata.store.factory import embedded_backends

    settings = load_workers_settings()
    if settings.backend != "ray":
        return None
    import ray

    out = ServiceWorkers()
    out.started_ray = not ray.is_initialized() and not settings.ray_address
    try:
        out.metrics = WorkersMetrics(registry=registry)
        out.layers = RayLayerExecutor(settings, metrics=out.metrics,
                                      fallback=LocalLayerExecutor(memory.builder))
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
        servicer.rollout_tenants = set(tenants)
    except BaseException:
        out.close()
        raise
    log.info("Ray workers: %d materializers, %d rollout actors", settings.materializers,
             len(out.rollouts.actors))
    return out
