"""Prometheus view of the LLM counts a :class:`~memstrata.llm.usage.UsageMeter` keeps.

The meter is the one place the core counts LLM use (it needs no
prometheus-client); services register :class:`LLMCollector` on their own
registry so their ``/metrics`` show ``memstrata_llm_fallbacks_total{role,reason}``:
how often a layer, or an answer, was built without the LLM because the LLM
failed; and ``memstrata_construction_*``: what the builder spent (the stream
worker's construction cost). Label values are bounded: roles are fixed, reasons come from
:data:`memstrata.llm.types.FAILURE_REASONS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from memstrata.llm.usage import RoleUsage, UsageMeter

FALLBACKS = "memstrata_llm_fallbacks"
#: Builder (construction) calls and tokens: the offline cost of building memory (L0 at
#: ingest, L1/L2 on first read), beside the answers' online cost.
CONSTRUCTION_CALLS = "memstrata_construction_calls"
CONSTRUCTION_TOKENS = "memstrata_construction_tokens"


class LLMCollector(Collector):
    """Reads the meters at scrape time (several meters, each counted once, are summed)."""

    def __init__(self, *meters: UsageMeter | None) -> None:
        unique: dict[int, UsageMeter] = {}
        for m in meters:
            if m is not None:
                unique.setdefault(id(m), m)
        self._meters = list(unique.values())

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            FALLBACKS, "Work the LLM should have done that a fallback did, by role and reason "
            "(extractive L0/L1/L2 builds, offline answers)", labels=["role", "reason"])
        totals: dict[tuple[str, str], int] = {}
        for meter in self._meters:
            for key, n in meter.fallbacks().items():
                totals[key] = totals.get(key, 0) + n
        for (role, reason), n in sorted(totals.items()):
            family.add_metric([role, reason], n)
        yield family
        yield from self._construction()

    def _construction(self) -> Iterator[CounterMetricFamily]:
        calls = CounterMetricFamily(CONSTRUCTION_CALLS, "Builder (construction) LLM calls",
                                    labels=[])
        tokens = CounterMetricFamily(CONSTRUCTION_TOKENS, "Builder (construction) LLM "
                                     "tokens by direction", labels=["direction"])
        used = RoleUsage()
        for meter in self._meters:
            used = used + meter.snapshot().get("builder", RoleUsage())
        calls.add_metric([], used.calls)
        tokens.add_metric(["in"], used.prompt_tokens)
        tokens.add_metric(["out"], used.completion_tokens)
        yield calls
        yield tokens

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(FALLBACKS, "", labels=["role", "reason"])
        yield CounterMetricFamily(CONSTRUCTION_CALLS, "", labels=[])
        yield CounterMetricFamily(CONSTRUCTION_TOKENS, "", labels=["direction"])


def register_llm_metrics(registry: Any, *meters: UsageMeter | None) -> LLMCollector:
    """Add ``memstrata_llm_fallbacks_total`` and the construction counters
    (``memstrata_construction_calls_total``, ``memstrata_construction_tokens_total``) for
    ``meters`` to a prometheus ``registry``."""
    collector = LLMCollector(*meters)
    registry.register(collector)
    return collector
