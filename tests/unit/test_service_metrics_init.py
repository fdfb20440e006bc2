"""/metrics before any LLM call: zeros, not missing series, plus process and runtime metrics."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from query_service.metrics import ANSWER_ROLES, ServiceMetrics


def samples(m: ServiceMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(m.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_llm_series_start_at_zero_offline():
    got = samples(ServiceMetrics(models=["gpt-4.1", "gpt-4.1-mini"]))
    for role in ANSWER_ROLES:
        assert got[("memstrata_llm_calls_total", (("role", role),))] == 0
        for d in ("in", "out"):
            assert got[("memstrata_llm_tokens_total", (("direction", d), ("role", role)))] == 0
    assert got[("memstrata_llm_cost_usd_total", (("model", "gpt-4.1"),))] == 0
    assert got[("memstrata_llm_cost_usd_total", (("model", "gpt-4.1-mini"),))] == 0


def test_process_and_python_runtime_metrics_are_exported():
    names = {name for name, _ in samples(ServiceMetrics())}
    assert "python_info" in names
    assert "python_gc_collections_total" in names
    assert "process_resident_memory_bytes" in names  # Linux: read from /proc
    ServiceMetrics()  # a second server in the same process registers its own collectors
