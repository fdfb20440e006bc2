"""register_once: a collector appears on one served registry per key."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from memstrata import collectors
from memstrata.collectors import register_once


class _Key:
    """Something a collector reads (weak-referenceable)."""


class _Gauge:
    def __init__(self, name: str) -> None:
        self.name = name

    def collect(self):  # type: ignore[no-untyped-def]
        g = GaugeMetricFamily(self.name, "test gauge")
        g.add_metric([], 1.0)
        yield g


def test_once_per_registry_and_skipped_where_an_included_registry_has_it() -> None:
    key, worker, service = _Key(), CollectorRegistry(), CollectorRegistry()
    assert register_once(key, worker, lambda: _Gauge("a")) is not None
    assert register_once(key, worker, lambda: _Gauge("a")) is None
    assert register_once(key, service, lambda: _Gauge("a"), included=[worker]) is None
    assert worker.get_sample_value("a") == 1.0
    assert service.get_sample_value("a") is None


def test_another_key_or_registry_registers_again() -> None:
    first, second = _Key(), _Key()
    one, two = CollectorRegistry(), CollectorRegistry()
    assert register_once(first, one, lambda: _Gauge("b")) is not None
    assert register_once(second, two, lambda: _Gauge("b")) is not None
    assert register_once(first, two, lambda: _Gauge("c")) is not None
    assert two.get_sample_value("b") == 1.0 and two.get_sample_value("c") == 1.0


def test_a_gone_key_leaves_nothing_behind() -> None:
    key = _Key()
    register_once(key, CollectorRegistry(), lambda: _Gauge("d"))
    before = len(collectors._holders)
    del key
    gc.collect()
    assert len(collectors._holders) == before - 1
