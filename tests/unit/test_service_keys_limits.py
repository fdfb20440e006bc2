"""Keys file, per-tenant gates and budgets of the query service (no server needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from query_service.keys import (
    KeyRing,
    KeysFileError,
    TenantPolicy,
    add_key,
    revoke_key,
    set_tenant_policy,
)
from query_service.limits import SpendLedger, TenantGate, limits_for
from query_service.settings import ServiceSettings


def test_keys_resolve_to_their_tenant_and_reload_on_change(tmp_path: Path):
    path = tmp_path / "keys.json"
    ring = KeyRing(path)
    kid, key = add_key(path, "acme")
    assert ring.tenant_for(key) == "acme"  # reloaded: the file appeared
    assert ring.tenant_for(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert ring.tenant_for(f"msk_{kid}_") is None and ring.tenant_for("") is None
    revoke_key(path, kid)
    assert ring.tenant_for(key) is None
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_bad_tenant_and_bad_file_are_named(tmp_path: Path):
    with pytest.raises(ValueError):
        add_key(tmp_path / "k.json", "no spaces allowed")
    bad = tmp_path / "bad.json"
    bad.write_text('{"keys": {"x": {"tenant": "a", "sha256": "short"}}}')
    with pytest.raises(KeysFileError, match=str(bad)):
        KeyRing(bad)


def test_tenant_policy_overrides_defaults(tmp_path: Path):
    path = tmp_path / "keys.json"
    set_tenant_policy(path, "tiny", TenantPolicy(rate_per_s=1, max_concurrent=2))
    ring = KeyRing(path)
    lim = limits_for(ServiceSettings(burst=7), ring.policy("tiny"))
    assert (lim.rate_per_s, lim.burst, lim.max_concurrent) == (1.0, 7, 2)
    assert limits_for(ServiceSettings(), ring.policy("other")).rate_per_s == 200.0


def test_gate_rate_and_concurrency(tmp_path: Path):
    """A fake clock steps the bucket's refill: no sleeping (issue 17, item 8)."""
    path = tmp_path / "keys.json"
    set_tenant_policy(path, "t", TenantPolicy(rate_per_s=16, burst=2, max_concurrent=3))
    now = [1000.0]  # steps of 1/32 s are exact in binary
    gate = TenantGate(ServiceSettings(), KeyRing(path), clock=lambda: now[0])
    assert gate.admit("t") is None and gate.admit("t") is None
    assert gate.admit("t") == ("rate", 0.0625)  # one token every 62.5 ms at 16/s
    now[0] += 0.03125
    assert gate.admit("t") == ("rate", 0.03125)  # half a token so far
    now[0] += 0.03125
    assert gate.admit("t") is None  # refilled
    now[0] += 10.0  # the bucket is full again, but three calls are in flight
    assert gate.admit("t") == ("concurrency", 0.05)
    gate.release("t")
    assert gate.admit("t") is None
    assert gate.admit("other") is None  # tenants do not share buckets


def test_weight_is_a_tenant_policy_field(tmp_path: Path):
    path = tmp_path / "keys.json"
    set_tenant_policy(path, "big", TenantPolicy(weight=3))
    gate = TenantGate(ServiceSettings(), KeyRing(path))
    assert gate.weight("big") == 3.0 and gate.weight("other") == 1.0
    bad = tmp_path / "bad.json"
    bad.write_text('{"tenants": {"t": {"weight": 0}}}')
    with pytest.raises(KeysFileError, match="weight"):
        KeyRing(bad)


@pytest.mark.parametrize("variable,value,field", [
    ("MEMSTRATA_SERVICE_SCHEDULER", "lifo", "scheduler"),
    ("MEMSTRATA_SERVICE_QUEUE_MAX_WAIT_S", "0", "queue_max_wait_s"),
    ("MEMSTRATA_SERVICE_QUEUE_MAX", "-1", "queue_max"),
    ("MEMSTRATA_SERVICE_LIMIT_MIN", "0", "limit_min"),
    ("MEMSTRATA_SERVICE_LIMIT_TOLERANCE", "1", "limit_tolerance"),
])
def test_bad_scheduler_settings_are_refused_by_field(monkeypatch, variable, value, field):
    from pydantic import ValidationError

    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as info:
        ServiceSettings()
    assert info.value.errors()[0]["loc"] == (field,)  # the CLI prints it as the variable


def test_limit_floor_above_ceiling_names_both_variables(monkeypatch):
    from pydantic import ValidationError

    monkeypatch.setenv("MEMSTRATA_SERVICE_LIMIT_MIN", "4")
    monkeypatch.setenv("MEMSTRATA_SERVICE_LIMIT_MAX", "2")
    with pytest.raises(ValidationError, match="MEMSTRATA_SERVICE_LIMIT_MIN.*"
                                              "MEMSTRATA_SERVICE_LIMIT_MAX"):
        ServiceSettings()
    monkeypatch.delenv("MEMSTRATA_SERVICE_LIMIT_MIN")
    assert ServiceSettings(scheduler="fifo").scheduler == "fifo"


def test_spend_ledger_budgets():
    ledger = SpendLedger()
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=100, daily_usd=0.5))
    assert ledger.exhausted("a", lim) is None
    ledger.record("a", 60, 0.1)
    assert ledger.exhausted("a", lim) is None
    ledger.record("a", 40, 0.1)
    assert "100 of 100 tokens" in (ledger.exhausted("a", lim) or "")
    ledger.record("b", 1, 0.6)
    assert "$0.6000 of $0.5000" in (ledger.exhausted("b", lim) or "")


def test_settings_modules_import_only_pydantic():
    """They are loaded at every start-up to check MEMSTRATA_* names: no grpc there."""
    import subprocess
    import sys

    code = ("import sys, query_service.settings, memstrata.client.settings; "
            "print(sorted(m for m in sys.modules if m.startswith(('grpc', 'google.protobuf'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ}, check=True).stdout.strip()
    assert out == "[]"


def test_service_and_client_namespaces_are_registered():
    """pyproject registers both classes; with them, their variables are accepted."""
    import tomllib

    from memstrata.client.settings import ClientSettings
    from memstrata.config import _load, _prefix_of, unknown_variables

    root = Path(__file__).resolve().parents[2]
    eps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"][
        "memstrata.settings"]
    assert _load(eps["service"]) is ServiceSettings and _load(eps["api"]) is ClientSettings
    assert _prefix_of(ServiceSettings) == "MEMSTRATA_SERVICE_"
    assert _prefix_of(ClientSettings) == "MEMSTRATA_API_"
    env = {"MEMSTRATA_API_KEY": "k", "MEMSTRATA_SERVICE_PORT": "1", "MEMSTRATA_SERVICE_PROT": "1"}
    assert unknown_variables(env) == ["MEMSTRATA_SERVICE_PROT"]


def test_tenant_label_is_off_by_default_and_bounded_when_on():
    from prometheus_client import generate_latest

    from query_service.metrics import ServiceMetrics

    off, on = ServiceMetrics(), ServiceMetrics(tenant_label=True)
    for m in (off, on):
        m.latency.labels(method="Search", code="OK", **m._t("acme")).observe(0.01)
        m.rate_limited.labels(method="Search", limit="rate", **m._t(None)).inc()
    assert b'tenant="acme"' not in generate_latest(off.registry)
    text = generate_latest(on.registry)
    assert b'tenant="acme"' in text and b'tenant="-"' in text


def test_spend_survives_a_restart_and_forgives_only_a_new_day(tmp_path: Path) -> None:
    path = tmp_path / "service" / "spend.json"
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=100))
    first = SpendLedger(path)
    first.record("a", 70, 0.2)
    first.record("a", 40, 0.1)
    assert "110 of 100 tokens" in (first.exhausted("a", lim) or "")

    again = SpendLedger(path)  # a restart: the day's spend is read back
    assert again.spent("a") == (110, pytest.approx(0.3))
    assert again.exhausted("a", lim) is not None
    assert again.spent("b") == (0, 0.0)

    # Yesterday's counts are not carried into today.
    data = json.loads(path.read_text())
    data["a"]["day"] = "2000-01-01"
    path.write_text(json.dumps(data))
    assert SpendLedger(path).spent("a") == (0, 0.0)


def test_an_unreadable_spend_file_starts_at_zero_and_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "spend.json"
    path.write_text("{not json")
    ledger = SpendLedger(path)
    assert ledger.spent("a") == (0, 0.0)
    ledger.record("a", 5, 0.01)
    assert json.loads(path.read_text())["a"]["tokens"] == 5
    assert not path.with_name("spend.json.tmp").exists()


def test_the_spend_file_sits_beside_the_served_data_unless_set(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from query_service.server import spend_path

    memory = SimpleNamespace(settings=SimpleNamespace(data_dir=tmp_path / "data"))
    assert spend_path(memory, ServiceSettings()) == tmp_path / "data" / "service" / "spend.json"
    chosen = tmp_path / "elsewhere.json"
    assert spend_path(memory, ServiceSettings(spend_file=chosen)) == chosen
