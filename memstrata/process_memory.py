"""The process-wide memory settings, applied once by the long-running commands.

``serve``, ``up`` and ``worker`` run for days, so two things that a short script
never notices matter there: glibc's mmap threshold (:mod:`memstrata.native_heap`)
and how much the process caches keep (the units of :mod:`memstrata.unit_caches`,
the words and texts of :mod:`memstrata.memo`). All are process-wide, so they are
set here from :class:`~memstrata.config.Settings` rather than by each ``Memory``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memstrata import memo, unit_caches
from memstrata.collectors import register_once
from memstrata.config import Settings
from memstrata.native_heap import pin_mmap_threshold
from memstrata.unit_caches import set_bound

ENTRIES = "memstrata_process_cache_entries"
BOUND = "memstrata_process_cache_bound_entries"


def apply(settings: Settings) -> None:
    """Pin the mmap threshold and bound the process caches as ``settings`` say."""
    pin_mmap_threshold(settings.malloc_mmap_threshold_kb)
    memo.set_cap(settings.cache_max_entries)
    set_bound(memo.capped(settings.unit_cache_entries))


def cache_sizes() -> dict[str, tuple[int, int]]:
    """Entries held now and the most allowed, summed per kind of process cache."""
    handles = memo.handles()
    units = unit_caches.caches()
    return {"text": (sum(h.entries() for h in handles), sum(h.bound() for h in handles)),
            "units": (sum(len(c) for c in units), sum(c.size for c in units))}


class CacheCollector(Collector):
    """The process caches' fill at scrape time: a heap still rising while these sit at
    their bounds is something else."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        held = GaugeMetricFamily(ENTRIES, "Entries the process caches hold, by kind "
                                 "(text: the text helpers' memo caches; units: L0 units)",
                                 labels=["cache"])
        bound = GaugeMetricFamily(BOUND, "The most entries the process caches may hold, by "
                                  "kind (MEMSTRATA_CACHE_MAX_ENTRIES caps each cache)",
                                  labels=["cache"])
        for kind, (n, most) in sorted(cache_sizes().items()):
            held.add_metric([kind], n)
            bound.add_metric([kind], most)
        yield held
        yield bound

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(ENTRIES, "", labels=["cache"])
        yield GaugeMetricFamily(BOUND, "", labels=["cache"])


class _ProcessCaches:
    """The key under which the process-wide cache collector is registered."""


_PROCESS_CACHES = _ProcessCaches()


def register_cache_metrics(registry: Any, included: Iterable[Any] = ()) -> bool:
    """Serve :class:`CacheCollector` on ``registry``, once per process: skipped (False)
    when it or one of ``included`` (registries it serves too) already has it."""
    return register_once(_PROCESS_CACHES, registry, CacheCollector, included) is not None
