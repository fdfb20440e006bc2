"""Prometheus metrics: how deep each answer read, what it cost, how each method fares.

One :class:`ServiceMetrics` per server, on its own registry (tests run servers
side by side). Label values are bounded: methods and status codes are fixed
sets, layers are L0-L3, roles and models come from settings; the tenant label
exists only when ``MEMSTRATA_SERVICE_METRICS_TENANT_LABEL`` is on (tenants are
bounded by the keys file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from memstrata.contract import Answer
from memstrata.evidence.trace import MEMORY_ROLE
from memstrata.llm.usage import PriceTable

NS = "memstrata"
#: The roles an answer calls an LLM in: their series start at 0, so a dashboard of an
#: offline service shows 0 rather than "no data".
ANSWER_ROLES = ("controller", "synthesizer", "generator")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ServiceMetrics:
    """Every metric the service exports, with helpers that keep labels consistent."""

    def __init__(self, *, tenant_label: bool = False,
                 registry: CollectorRegistry | None = None,
                 models: Sequence[str] = ()) -> None:
        """``models``: the configured LLM models, whose cost series start at 0."""
        self.registry = registry or CollectorRegistry()
        self.tenant_label = tenant_label
        t = ["tenant"] if tenant_label else []
        r = self.registry
        self.answer_depth = Histogram(
            f"{NS}_answer_depth", "Deepest layer an answer read (0: L0 summaries ... 3: raw turns)",
            t, buckets=(0, 1, 2, 3), registry=r)
        self.layer_reads = Counter(f"{NS}_layer_reads", "Controller reads by layer",
                                   ["layer", *t], registry=r)
        self.drilled_share = Histogram(
            f"{NS}_answer_drilled_share", "Share of the user's sessions an answer drilled into",
            t, buckets=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0), registry=r)
        self.steps = Histogram(f"{NS}_answer_steps", "Controller steps per answer", t,
                               buckets=(1, 2, 3, 5, 8, 12, 20, 30, 50), registry=r)
        self.llm_calls = Counter(f"{NS}_llm_calls", "LLM calls by role", ["role", *t],
                                 registry=r)
        self.llm_tokens = Counter(f"{NS}_llm_tokens", "LLM tokens by role and direction",
                                  ["role", "direction", *t], registry=r)
        self.memory_tokens = Counter(
            f"{NS}_memory_tokens_read", "Memory text read by the controller, in estimated tokens",
            t, registry=r)
        self.cost = Counter(f"{NS}_llm_cost_usd", "LLM spend in USD by model", ["model", *t],
                            registry=r)
        self.budget_fallbacks = Counter(
            f"{NS}_budget_fallbacks", "Answers given offline because the LLM budget ran out", t,
            registry=r)
        self.latency = Histogram(f"{NS}_rpc_latency_seconds", "Call latency by method and code",
                                 ["method", "code", *t], buckets=LATENCY_BUCKETS, registry=r)
        self.in_flight = Gauge(f"{NS}_rpc_in_flight", "Calls being served", ["method"],
                               registry=r)
        self.errors = Counter(f"{NS}_rpc_errors", "Calls that ended in an error, by code",
                              ["method", "code", *t], registry=r)
        self.rate_limited = Counter(f"{NS}_rpc_rate_limited",
                                    "Calls refused by a rate or concurrency limit",
                                    ["method", "limit", *t], registry=r)
        # Fair scheduling (query_service/scheduler.py): time from a call asking for a pool
        # thread to its work starting there; calls refused to protect the service, by
        # reason (deadline, queue_wait, queue_full); each pool's current concurrency limit.
        self.queue_wait = Histogram(f"{NS}_queue_wait_seconds",
                                    "Time a call's work waited for a pool thread, by method",
                                    ["method", *t], buckets=LATENCY_BUCKETS, registry=r)
        self.shed = Counter(f"{NS}_shed_calls", "Calls refused by load shedding, by reason",
                            ["method", "reason", *t], registry=r)
        self.concurrency_limit = Gauge(f"{NS}_concurrency_limit",
                                       "Calls a pool may work on at once (adaptive)", ["pool"],
                                       registry=r)
        self.queued = Gauge(f"{NS}_queued_calls", "Calls waiting for a pool, all tenants",
                            ["pool"], registry=r)
        self.abandoned = Counter(f"{NS}_work_abandoned",
                                 "Work stopped because its call was cancelled or ran out of time",
                                 ["method", "reason"], registry=r)
        if not tenant_label:  # with a tenant label the series appear with their tenant
            for role in ANSWER_ROLES:
                self.llm_calls.labels(role=role)
                for direction in ("in", "out"):
                    self.llm_tokens.labels(role=role, direction=direction)
            for model in dict.fromkeys(models):
                self.cost.labels(model=model)
        self._runtime_collectors(r)

    @staticmethod
    def _runtime_collectors(registry: CollectorRegistry) -> None:
        """Process (CPU, memory, open files) and Python runtime (version, GC) metrics.

        The default registry has them already; a registry of our own needs its own.
        """
        from prometheus_client import REGISTRY

        if registry is REGISTRY:
            return
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)

    def _t(self, tenant: str | None) -> dict[str, str]:
        return {"tenant": tenant or "-"} if self.tenant_label else {}

    @staticmethod
    def _at(metric: Any, labels: dict[str, str]) -> Any:
        """The child for ``labels``, or the metric itself when it has no labels."""
        return metric.labels(**labels) if labels else metric

    def observe_answer(self, answer: Answer, prices: PriceTable, tenant: str | None,
                       *, fallback: bool = False) -> None:
        t = self._t(tenant)
        s = answer.summary
        if s.deepest_layer is not None:
            self._at(self.answer_depth, t).observe(int(s.deepest_layer))
        if s.haystack_sessions:
            self._at(self.drilled_share, t).observe(s.drilled_share)
        self._at(self.steps, t).observe(s.steps)
        for step in answer.steps:
            if step.layer is not None and not step.tool.startswith("llm:"):
                self.layer_reads.labels(layer=step.layer.label, **t).inc()
        for role, usage in s.tokens.items():
            if role == MEMORY_ROLE:
                self._at(self.memory_tokens, t).inc(usage.tokens_out)
                continue
            self.llm_calls.labels(role=role, **t).inc(usage.calls)
            self.llm_tokens.labels(role=role, direction="in", **t).inc(usage.tokens_in)
            self.llm_tokens.labels(role=role, direction="out", **t).inc(usage.tokens_out)
        for step in answer.steps:
            if step.tool.startswith("llm:"):
                model = str(step.arguments.get("model", "unknown"))
                price = prices.price_for(model)
                if price is not None:
                    self.cost.labels(model=model, **t).inc(
                        price.cost(step.tokens_in, step.tokens_out))
        if fallback:
            self._at(self.budget_fallbacks, t).inc()

    def include(self, registry: CollectorRegistry) -> None:
        """Serve another registry's metrics on this one's /metrics too.

        ``memstrata serve`` hosts the stream worker in the same process: its
        ``memstrata_stream_*`` series (DLQ counts among them) then appear on the
        service's ``--metrics-port`` beside the service's own.
        """
        self.registry.register(_Included(registry))

    def serve_http(self, port: int, host: str = "0.0.0.0") -> object:
        """Start the /metrics endpoint; returns the HTTP server (``shutdown()`` stops it)."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return server


class _Included:
    """A collector that yields another registry's metrics (read at every scrape)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def describe(self) -> list[Any]:
        return []  # names are not claimed: the two registries never share a name

    def collect(self) -> Any:
        return self._registry.collect()
