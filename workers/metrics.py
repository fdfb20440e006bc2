"""``memstrata_workers_*`` Prometheus metrics, kept in the hosting process.

Actors report what happened in each reply (built or joined, attempts, seconds);
the process that asked records it here, so the numbers appear on that
process's /metrics (the query service's, or ``eval qa``'s registry).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class WorkersMetrics:
    """Builds, joins, cache hits, queues, rollouts, pre-warming and actor restarts."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.builds = Counter("memstrata_workers_builds", "L1/L2 builds by layer and outcome "
                              "(ok, failed, busy, timeout, fallback)",
                              ["layer", "outcome"], registry=r)
        self.build_retries = Counter("memstrata_workers_build_retries",
                                     "Builder attempts that failed and were retried",
                                     ["layer"], registry=r)
        self.joins = Counter("memstrata_workers_single_flight_joins",
                             "Build requests answered by a build another caller started",
                             ["layer"], registry=r)
        self.cache = Counter("memstrata_workers_cache", "Layer reads by cache result (hit, miss)",
                             ["result"], registry=r)
        self.cache_hit_ratio = Gauge("memstrata_workers_cache_hit_ratio",
                                     "Share of layer reads served from the cache", registry=r)
        self.queue_depth = Gauge("memstrata_workers_queue_depth",
                                 "Requests this process has waiting on the workers",
                                 ["pool"], registry=r)
        self.build_seconds = Histogram("memstrata_workers_build_seconds",
                                       "Seconds one build took on its actor", ["layer"],
                                       registry=r)
        self.rollouts = Counter("memstrata_workers_rollouts", "Rollouts by outcome "
                                "(ok, failed, busy, timeout)", ["outcome"], registry=r)
        self.prewarm_sessions = Counter("memstrata_workers_prewarm_sessions",
                                        "Sessions pre-warmed, by outcome (built, cached, "
                                        "skipped_budget, failed)", ["outcome"], registry=r)
        self.prewarm_spend = Counter("memstrata_workers_prewarm_spend_usd",
                                     "Estimated spend of pre-warming builds", registry=r)
        self.actor_restarts = Counter("memstrata_workers_actor_restarts",
                                      "Actors Ray restarted (seen as a new incarnation)",
                                      ["pool"], registry=r)
        self.fallbacks = Counter("memstrata_workers_fallbacks",
                                 "Work run in-process because the Ray cluster was lost",
                                 ["pool"], registry=r)
        self.skipped = Counter("memstrata_workers_rollouts_in_process",
                               "Answers run in the service's process though the Ray pool is on, "
                               "by reason (tenant_not_in_pool: the tenant's key was added "
                               "after the service started, with embedded stores)",
                               ["reason"], registry=r)
        self._hits = 0
        self._reads = 0

    def cache_read(self, hit: bool) -> None:
        self.cache.labels(result="hit" if hit else "miss").inc()
        self._reads += 1
        self._hits += int(hit)
        self.cache_hit_ratio.set(self._hits / self._reads)
