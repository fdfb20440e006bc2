"""L1/L2 builds on Ray: named materializer actors, one flight per key across processes.

A key (tenant, user, session, layer, builder version) always hashes to the
same named actor, so every process that asks for it talks to one actor, which
builds once and answers every waiter (and, for a while, late arrivals of the
same turns digest). Actors get the session's meta and turns in the request and
hand back the items: they never touch a store. The caller's
:class:`~memstrata.layers.lazy.LazyLayers` writes the cache as it always did.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tenacity import RetryCallState, Retrying, stop_after_attempt, wait_exponential

from memstrata.config import Settings
from memstrata.executor import ExecutorBusy, ExecutorUnavailable
from memstrata.layers.executor import build_items
from memstrata.llm.types import Built, LayerBuilder
from memstrata.roles import HostedMemory, LayerExecutor, LayerRequest
from workers.cluster import connect, is_ray_lost
from workers.metrics import WorkersMetrics
from workers.settings import WorkersSettings
from workers.tracing import actor_tracing, call_in, carrier

log = logging.getLogger(__name__)

#: Builds a layer builder inside the actor (the builder itself may hold sockets).
BuilderFactory = Callable[[], LayerBuilder]

#: Finished builds kept per actor to answer late arrivals of the same (key, digest).
RECENT_BUILDS = 512
RECENT_TTL_S = 120.0


class BuildFailed(RuntimeError):
    """The builder failed on every attempt; nothing was cached."""


class Materializer:
    """One materializer actor (wrapped with ``ray.remote`` by :func:`materializer_class`)."""

    def __init__(self, builder_factory: BuilderFactory, settings: WorkersSettings) -> None:
        actor_tracing()  # the node's OTEL_* environment: spans join the callers' traces
        self.builder = builder_factory()
        self.settings = settings
        self._pool = ThreadPoolExecutor(settings.build_threads, thread_name_prefix="build")
        self._inflight: dict[tuple[str, ...], asyncio.Future[Built[dict[str, Any]]]] = {}
        self._recent: OrderedDict[tuple[str, ...], tuple[float, Built[dict[str, Any]]]] = \
            OrderedDict()
        #: Changes when Ray restarts the actor: callers count restarts by it.
        self.incarnation = uuid.uuid4().hex
        self.counts = {"builds": 0, "joins": 0, "failures": 0, "retries": 0, "busy": 0}
        self._lock = threading.Lock()

    def _build_with_retries(self, req: LayerRequest) -> tuple[Built[dict[str, Any]], int]:
        s = self.settings
        attempts = 0

        def retried(state: RetryCallState) -> None:
            with self._lock:
                self.counts["retries"] += 1
            log.warning("build %s failed (attempt %d), retrying: %s", req.key,
                        state.attempt_number, state.outcome.exception() if state.outcome else "")

        for attempt in Retrying(stop=stop_after_attempt(s.build_retries + 1),
                                wait=wait_exponential(multiplier=s.build_backoff_s,
                                                      max=s.build_backoff_max_s),
                                before_sleep=retried, reraise=True):
            with attempt:
                attempts += 1
                return build_items(self.builder, req), attempts
        raise AssertionError("unreachable")  # pragma: no cover

    async def build(self, req: LayerRequest, trace: dict[str, str] | None = None,
                    ) -> dict[str, Any]:
        """The items of ``req``'s layer, with how they were obtained; ``trace``: the
        caller's trace context (:func:`workers.tracing.carrier`)."""
        if req.builder_version != self.builder.version:
            raise ValueError(f"builder version mismatch: the caller caches under "
                             f"{req.builder_version!r}, this actor builds "
                             f"{self.builder.version!r}; both sides must run one builder")
        k = (*req.key, req.digest)
        now = time.monotonic()
        recent = self._recent.get(k)
        if recent is not None and now - recent[0] < RECENT_TTL_S:
            self.counts["joins"] += 1
            return {"items": recent[1].items, "fallback": recent[1].fallback, "joined": True,
                    "attempts": 0, "seconds": 0.0, "incarnation": self.incarnation}
        fut = self._inflight.get(k)
        if fut is not None:
            self.counts["joins"] += 1
            joined = await asyncio.shield(fut)
            return {"items": joined.items, "fallback": joined.fallback, "joined": True,
                    "attempts": 0, "seconds": 0.0, "incarnation": self.incarnation}
        if len(self._inflight) >= self.settings.build_queue:
            self.counts["busy"] += 1
            raise ExecutorBusy(f"materializer busy: {len(self._inflight)} builds queued or "
                               f"running (MEMSTRATA_WORKERS_BUILD_QUEUE="
                               f"{self.settings.build_queue}); retry later")
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._inflight[k] = fut
        t0 = time.perf_counter()
        try:
            items, attempts = await loop.run_in_executor(
                self._pool, functools.partial(call_in, trace, self._build_with_retries, req))
        except Exception as exc:
            self.counts["failures"] += 1
            failure = BuildFailed(f"building {req.layer} of session {req.session_id!r} failed "
                                  f"after {self.settings.build_retries + 1} attempt(s): "
                                  f"{type(exc).__name__}: {exc}")
            fut.set_exception(failure)
            fut.exception()  # marks it retrieved when nobody joined
            raise failure from exc
        finally:
            del self._inflight[k]
        self.counts["builds"] += 1
        fut.set_result(items)
        self._recent[k] = (time.monotonic(), items)
        while len(self._recent) > RECENT_BUILDS:
            self._recent.popitem(last=False)
        return {"items": items.items, "fallback": items.fallback, "joined": False,
                "attempts": attempts,
                "seconds": time.perf_counter() - t0, "incarnation": self.incarnation}

    async def stats(self) -> dict[str, Any]:
        return {**self.counts, "inflight": len(self._inflight), "incarnation": self.incarnation}


@functools.lru_cache(maxsize=1)
def materializer_class() -> Any:
    import ray

    return ray.remote(Materializer)


def route(key: tuple[str, ...], n: int) -> int:
    """The materializer index a key belongs to (stable across processes and restarts)."""
    digest = hashlib.sha256("\x1f".join(key).encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


@dataclasses.dataclass(frozen=True)
class SettingsBuilder:
    """A picklable builder factory: the builder ``settings`` configure (the owning memory's).

    The settings travel to the actor with it, so the actor never reads its own
    environment (a node's variables may differ from the service's).
    """

    settings: Settings

    def __call__(self) -> LayerBuilder:
        from memstrata.llm.factory import open_builder

        return open_builder(self.settings)


class RayLayerExecutor(LayerExecutor):
    """Sends builds to the materializer that owns their key; falls back when Ray is lost."""

    def __init__(self, settings: WorkersSettings, *,
                 builder_factory: BuilderFactory,
                 metrics: WorkersMetrics | None = None,
                 fallback: LayerExecutor | None = None,
                 detached: bool | None = None,
                 name_prefix: str = "memstrata-materializer") -> None:
        self.ray = connect(settings)
        self.settings = settings
        self.metrics = metrics or WorkersMetrics()
        self.fallback = fallback
        #: Set once Ray was lost and builds run in-process instead.
        self.degraded = False
        cls = materializer_class()
        lifetime = "detached" if (settings.ray_address if detached is None else detached) \
            else None
        self.actors = [
            cls.options(name=f"{name_prefix}-{i}", get_if_exists=True,
                        lifetime=lifetime, max_restarts=settings.max_restarts,
                        max_task_retries=settings.max_task_retries,
                        max_concurrency=settings.build_queue * 4 + 16, num_cpus=0)
            .remote(builder_factory, settings)
            for i in range(settings.materializers)]
        self._incarnations: dict[int, str] = {}
        self._waiting = 0
        self._lock = threading.Lock()

    def build_layer(self, request: LayerRequest) -> Built[dict[str, Any]]:
        if self.degraded and self.fallback is not None:
            return self.fallback.build_layer(request)
        from ray import exceptions as rx

        m, layer = self.metrics, request.layer
        i = route(request.key, len(self.actors))
        with self._lock:
            self._waiting += 1
            m.queue_depth.labels(pool="materialize").set(self._waiting)
        try:
            ref = self.actors[i].build.remote(request, carrier())
            reply = self.ray.get(ref, timeout=self.settings.build_timeout_s)
        except rx.GetTimeoutError:
            m.builds.labels(layer=layer, outcome="timeout").inc()
            raise TimeoutError(f"building {layer} of session {request.session_id!r} took over "
                               f"{self.settings.build_timeout_s:g} s "
                               f"(MEMSTRATA_WORKERS_BUILD_TIMEOUT_S)") from None
        except rx.RayTaskError as exc:
            cause = getattr(exc, "cause", None) or exc
            if isinstance(cause, ExecutorBusy):
                m.builds.labels(layer=layer, outcome="busy").inc()
                raise ExecutorBusy(str(cause)) from None
            m.builds.labels(layer=layer, outcome="failed").inc()
            raise BuildFailed(str(cause)) from None
        except Exception as exc:
            if not is_ray_lost(exc):
                raise
            m.fallbacks.labels(pool="materialize").inc()
            if self.fallback is None:
                raise ExecutorUnavailable(f"the Ray cluster is unreachable: {exc}") from None
            log.error("Ray lost while building %s (%s); building in-process from now on",
                      request.key, exc)
            self.degraded = True
            m.builds.labels(layer=layer, outcome="fallback").inc()
            return self.fallback.build_layer(request)
        finally:
            with self._lock:
                self._waiting -= 1
                m.queue_depth.labels(pool="materialize").set(self._waiting)
        seen = self._incarnations.get(i)
        if seen is not None and seen != reply["incarnation"]:
            m.actor_restarts.labels(pool="materialize").inc()
        self._incarnations[i] = reply["incarnation"]
        if reply["joined"]:
            m.joins.labels(layer=layer).inc()
        else:
            m.builds.labels(layer=layer, outcome="ok").inc()
            m.build_seconds.labels(layer=layer).observe(reply["seconds"])
            if reply["attempts"] > 1:
                m.build_retries.labels(layer=layer).inc(reply["attempts"] - 1)
        return Built(list(reply["items"]), reply.get("fallback"))

    def stats(self) -> list[dict[str, Any]]:
        """Each materializer's counters (builds, joins, failures, retries, busy)."""
        return list(self.ray.get([a.stats.remote() for a in self.actors]))

    def close(self, kill: bool = True) -> None:
        """Kill the named actors (a detached deployment keeps them: ``kill=False``)."""
        if kill:
            for a in self.actors:
                self.ray.kill(a, no_restart=True)


def attach(memory: HostedMemory, executor: LayerExecutor,
           metrics: WorkersMetrics | None = None) -> LayerExecutor:
    """Route ``memory``'s L1/L2 builds through ``executor`` and count its cache reads.

    Through the memory's two seams (``use_layer_executor``, ``on_layer_read``);
    returns the executor replaced, so a caller can put it back.
    """
    previous = memory.use_layer_executor(executor)
    if metrics is not None:
        def counted(layer: str, from_cache: bool) -> None:
            metrics.cache_read(from_cache)

        memory.on_layer_read(counted)
    return previous
