"""Render helpers for the Helm chart tests (helm-python-sdk, no helm binary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "memstrata"

#: Values of a distributed install against services that exist before the chart.
DISTRIBUTED: dict[str, Any] = {
    "mode": "distributed",
    "distributed": {
        "kafkaBrokers": "kafka-0.kafka:9092,kafka-1.kafka:9092",
        "qdrantUrl": "https://qdrant.db:6333",
        "opensearchUrl": "https://opensearch.db:9200",
    },
    "existingSecret": "memstrata-env",
    "keysSecret": "memstrata-keys",
    "tlsSecret": "memstrata-ca",
}

#: Every shape and flag the chart has, by name.
SHAPES: dict[str, dict[str, Any]] = {
    "embedded-defaults": {},
    "embedded-all-flags": {
        "networkPolicy": {"enabled": True},
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus"}},
        "prometheusRule": {"enabled": True},
        "keysSecret": "memstrata-keys",
        "existingSecret": "memstrata-env",
        "mcp": {"enabled": True},
    },
    "distributed": DISTRIBUTED,
    "distributed-no-hpa": {**DISTRIBUTED, "distributed": {
        **DISTRIBUTED["distributed"],
        "queryService": {"autoscaling": {"enabled": False, "minReplicas": 1,
                                          "maxReplicas": 2,
                                          "targetCPUUtilizationPercentage": 50}},
        "streamWorker": {"autoscaling": {"enabled": False, "minReplicas": 1,
                                          "maxReplicas": 2,
                                          "targetCPUUtilizationPercentage": 50}}}},
    "distributed-grpc-tls": {
        **DISTRIBUTED,
        "grpcTls": {"secret": "memstrata-grpc", "clientCaKey": "client-ca.crt"},
        "config": {"MEMSTRATA_KAFKA_PARTITIONS": "12", "MEMSTRATA_KAFKA_REPLICATION": "3",
                   "MEMSTRATA_KAFKA_RETENTION_HOURS": "72"},
    },
    "embedded-grpc-tls": {"grpcTls": {"secret": "memstrata-grpc"}},
    "distributed-ray-all-flags": {
        **DISTRIBUTED,
        "ray": {"enabled": True, "auth": {"existingSecret": "memstrata-ray"}},
        "networkPolicy": {"enabled": True,
                          "grpcFrom": [{"namespaceSelector": {"matchLabels": {"team": "chat"}}}]},
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "mcp": {"enabled": True, "user": "maya", "allowedHosts": ["mcp.example.com"],
                "jwt": {"enabled": True, "issuer": "https://idp.example.com/",
                        "audience": "memstrata-mcp", "jwksSecret": "idp-jwks"}},
    },
}


def render(values: dict[str, Any], name: str = "rel", namespace: str = "memory") -> list[dict]:
    """Every manifest the chart renders for ``values`` (NOTES.txt left out)."""
    from helm_python import Chart

    out = Chart.load(str(CHART)).render(values, name=name, namespace=namespace)
    docs: list[dict] = []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def notes(values: dict[str, Any]) -> str:
    from helm_python import Chart

    out = Chart.load(str(CHART)).render(values, name="rel", namespace="memory")
    return next(v for k, v in out.items() if k.endswith("NOTES.txt"))


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d.get("kind") == kind]


def pod_specs(docs: list[dict]) -> list[tuple[str, dict]]:
    """(owner name, pod spec) of every workload, RayCluster groups included."""
    found = []
    for d in docs:
        kind, spec = d["kind"], d.get("spec", {})
        if kind in ("Deployment", "StatefulSet"):
            found.append((d["metadata"]["name"], spec["template"]["spec"]))
        elif kind == "RayCluster":
            found.append((d["metadata"]["name"] + "/head",
                          spec["headGroupSpec"]["template"]["spec"]))
            for g in spec["workerGroupSpecs"]:
                found.append((d["metadata"]["name"] + "/" + g["groupName"],
                              g["template"]["spec"]))
    return found
