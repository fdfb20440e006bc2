"""Token accounting and cost."""

from __future__ import annotations

import json
import threading

import pytest

from memstrata.llm.usage import ModelPrice, PriceError, PriceTable, RoleUsage, UsageMeter


def test_meter_sums_per_role_and_in_total() -> None:
    meter = UsageMeter()
    meter.record("builder", 100, 20, "m-small")
    meter.record("builder", 50, 10, "m-small")
    meter.record("controller", 1000, 30, "m-big")

    snap = meter.snapshot()
    assert snap["builder"] == RoleUsage(calls=2, prompt_tokens=150, completion_tokens=30)
    assert snap["controller"] == RoleUsage(calls=1, prompt_tokens=1000, completion_tokens=30)
    assert "judge" not in snap
    total = meter.totals()
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (3, 1150, 60)
    assert total.total_tokens == 1210
    assert meter.by_model()["m-big"].prompt_tokens == 1000

    meter.reset()
    assert meter.snapshot() == {} and meter.totals() == RoleUsage()


def test_meter_rejects_unknown_role_and_negative_counts() -> None:
    meter = UsageMeter()
    with pytest.raises(ValueError, match="unknown role"):
        meter.record("planner", 1, 1, "m")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        meter.record("builder", -1, 0, "m")


def test_cost_uses_each_models_price_and_family_prefix() -> None:
    prices = PriceTable(models={
        "m-small": ModelPrice(input_per_mtok=0.4, output_per_mtok=1.6),
        "m-big": ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0),
    })
    meter = UsageMeter()
    meter.record("builder", 1_000_000, 500_000, "m-small")
    meter.record("controller", 250_000, 100_000, "m-big-2025-04-14")  # dated snapshot
    expected = (0.4 + 0.5 * 1.6) + (0.25 * 2.0 + 0.1 * 8.0)
    assert meter.cost_usd(prices) == pytest.approx(expected)


def test_cost_of_unpriced_model_is_an_error_unless_lenient() -> None:
    meter = UsageMeter()
    meter.record("generator", 10, 10, "mystery")
    meter.record("builder", 1_000_000, 0, "gpt-4.1-mini")
    with pytest.raises(PriceError, match="mystery"):
        meter.cost_usd(PriceTable.example())
    assert meter.cost_usd(PriceTable.example(), strict=False) == pytest.approx(0.40)


def test_longest_prefix_wins() -> None:
    table = PriceTable.example()
    mini = table.price_for("gpt-4.1-mini-2025-04-14")
    assert mini == table.models["gpt-4.1-mini"]
    assert table.price_for("gpt-4.1") == table.models["gpt-4.1"]
    assert table.price_for("claude-x") is None


def test_price_table_loads_json_and_toml(tmp_path) -> None:
    js = tmp_path / "prices.json"
    js.write_text(json.dumps({"models": {"a": {"input_per_mtok": 1, "output_per_mtok": 2}}}))
    toml = tmp_path / "prices.toml"
    toml.write_text('[models.b]\ninput_per_mtok = 3.0\noutput_per_mtok = 4.0\n')
    assert PriceTable.load(js).models["a"].output_per_mtok == 2
    assert PriceTable.load(toml).models["b"].input_per_mtok == 3.0

    bad = tmp_path / "bad.json"
    bad.write_text('{"models": {"a": {"input_per_mtok": -1, "output_per_mtok": 0}}}')
    with pytest.raises(PriceError, match=r"bad\.json"):
        PriceTable.load(bad)
    with pytest.raises(PriceError):
        PriceTable.load(tmp_path / "missing.json")


def test_meter_is_thread_safe() -> None:
    meter = UsageMeter()
    roles = ["builder", "controller", "synthesizer", "generator"]

    def work(role: str) -> None:
        for _ in range(2000):
            meter.record(role, 3, 1, f"model-{role}")  # type: ignore[arg-type]

    threads = [threading.Thread(target=work, args=(roles[i % 4],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = meter.totals()
    assert total.calls == 16_000
    assert total.prompt_tokens == 48_000 and total.completion_tokens == 16_000
    assert all(meter.snapshot()[r].calls == 4000 for r in roles)
