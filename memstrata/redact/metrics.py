"""Prometheus view of :class:`~memstrata.redact.redactor.RedactionCounts`.

``memstrata_redactions_total{tenant,kind}``: values found (masked, or in a
dropped message); ``memstrata_redacted_messages_total{tenant,action}``:
messages masked or dropped. Labels are the tenant id and fixed words, never
a value or any text. Services register the collector on their own registry
(the core needs no prometheus-client).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from memstrata.collectors import register_once
from memstrata.redact.redactor import RedactionCounts

__all__ = ["MESSAGES", "VALUES", "RedactionCollector", "register_redaction_metrics"]

VALUES = "memstrata_redactions"
MESSAGES = "memstrata_redacted_messages"


class RedactionCollector(Collector):
    """Reads the counts at scrape time."""

    def __init__(self, counts: RedactionCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        values = CounterMetricFamily(VALUES, "Sensitive values found on the write path, by "
                                     "tenant and kind (masked, or in a dropped message)",
                                     labels=["tenant", "kind"])
        for (tenant, kind), n in sorted(self.counts.values().items()):
            values.add_metric([tenant, kind], n)
        messages = CounterMetricFamily(MESSAGES, "Messages masked or dropped by the redaction "
                                       "policy, by tenant and action", labels=["tenant", "action"])
        for (tenant, action), n in sorted(self.counts.messages().items()):
            messages.add_metric([tenant, action], n)
        yield values
        yield messages

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(VALUES, "", labels=["tenant", "kind"])
        yield CounterMetricFamily(MESSAGES, "", labels=["tenant", "action"])


def register_redaction_metrics(registry: Any, memory: Any,
                               included: Iterable[Any] = ()) -> RedactionCollector | None:
    """Serve the redaction counters of ``memory`` (its ``redactor``) on ``registry``.

    Skipped (None) when ``memory`` has no redactor, or when its counts are already on
    one of ``included`` (registries this one serves too: ``memstrata serve`` hosts the
    stream worker, whose registry the service includes).
    """
    counts = getattr(memory.redactor, "counts", None)
    if not isinstance(counts, RedactionCounts):
        return None
    return register_once(counts, registry, lambda: RedactionCollector(counts), included)
