"""Every PromQL expression the deployment ships (rules, alerts, dashboards) and the
metric names each one reads."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "infra" / "prometheus" / "rules" / "memstrata.rules.yml"
DASHBOARDS = ROOT / "infra" / "grafana" / "dashboards"

#: Metrics of the Ray workers (workers/metrics.py, built on another branch), shown on the
#: hosting process's /metrics. Dashboards and alerts read them; the cross-check takes
#: their names from ``workers.metrics.WorkersMetrics`` once that package is installed.
FROM_WORKERS = {
    "memstrata_workers_cache_total",
    "memstrata_workers_queue_depth",
    "memstrata_workers_builds_total",
}

# Grafana's range variables become plain durations for parsing.
_GRAFANA_VARS = re.compile(r"\$__(rate_interval|range|interval)")


def expressions() -> dict[str, str]:
    """Where -> PromQL, for every rule, alert and dashboard query."""
    found: dict[str, str] = {}
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            found[f"rule {rule.get('record') or rule.get('alert')}"] = rule["expr"]
    import json

    for path in sorted(DASHBOARDS.glob("*.json")):
        dash = json.loads(path.read_text())
        for panel in dash["panels"]:
            for i, target in enumerate(panel.get("targets") or []):
                found[f"{path.name}: {panel['title']} [{i}]"] = target["expr"]
    return found


def recorded_names() -> set[str]:
    return {rule["record"] for group in yaml.safe_load(RULES.read_text())["groups"]
            for rule in group["rules"] if "record" in rule}


def metric_names(expr: str) -> set[str]:
    """Names of the series an expression selects (parses it: a syntax error raises)."""
    import promql_parser

    tree = promql_parser.parse(_GRAFANA_VARS.sub("5m", expr))
    names: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)
        return True

    promql_parser.walk(tree, visit)
    return names


def exported_names(exposition: str) -> set[str]:
    """Series names a /metrics page offers, from its TYPE lines (labelled metrics with
    no sample yet count too: they are registered and will appear)."""
    names: set[str] = set()
    for line in exposition.splitlines():
        if not line.startswith("# TYPE "):
            continue
        _, _, name, kind = line.split(" ", 3)
        if kind == "histogram":
            names |= {name + "_bucket", name + "_sum", name + "_count"}
        elif kind == "counter":
            names |= {name if name.endswith("_total") else name + "_total"}
        else:
            names.add(name)
    return names
