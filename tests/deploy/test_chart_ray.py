"""The chart's Ray: the image's Ray version, the query service switched to the Ray
backend at the head's Ray client address, and one token Secret for head, workers and
service."""

from __future__ import annotations

import copy

import pytest
import yaml

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk (the deploy extra)")

from tests.deploy.chart import CHART, DISTRIBUTED, by_kind, render  # noqa: E402

RAY = {**DISTRIBUTED, "ray": {"enabled": True, "auth": {"existingSecret": "memstrata-ray"}}}


def _env(container: dict) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_ray_version_is_the_installed_ray() -> None:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["ray"]["rayVersion"] == ray.__version__
    cluster = by_kind(render(RAY), "RayCluster")[0]
    assert cluster["spec"]["rayVersion"] == ray.__version__


def test_ray_enabled_wires_the_service_and_the_token() -> None:
    docs = render(RAY, name="rel")
    secret = {"secretKeyRef": {"name": "memstrata-ray", "key": "token"}}
    query = next(d for d in by_kind(docs, "Deployment") if "query" in d["metadata"]["name"])
    env = _env(query["spec"]["template"]["spec"]["containers"][0])
    cluster = by_kind(docs, "RayCluster")[0]
    assert env["MEMSTRATA_WORKERS_BACKEND"] == "ray"
    assert env["MEMSTRATA_WORKERS_RAY_ADDRESS"] == \
        f"ray://{cluster['metadata']['name']}-head-svc:10001"  # KubeRay's head Service
    assert env["MEMSTRATA_WORKERS_RAY_AUTH_TOKEN"] == secret
    head = cluster["spec"]["headGroupSpec"]
    assert head["rayStartParams"]["ray-client-server-port"] == "10001"
    pods = [head["template"]["spec"]] + [g["template"]["spec"]
                                         for g in cluster["spec"]["workerGroupSpecs"]]
    for pod in pods:
        node = _env(pod["containers"][0])
        assert node["RAY_AUTH_MODE"] == "token" and node["RAY_AUTH_TOKEN"] == secret


def test_token_secret_is_required_unless_auth_is_off() -> None:
    values = copy.deepcopy(RAY)
    values["ray"]["auth"] = {}
    with pytest.raises(helm_python.HelmError, match="ray.auth.existingSecret"):
        render(values)
    values["ray"]["auth"] = {"enabled": False}
    docs = render(values)
    cluster = by_kind(docs, "RayCluster")[0]
    assert "RAY_AUTH_MODE" not in _env(
        cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0])
    query = next(d for d in by_kind(docs, "Deployment") if "query" in d["metadata"]["name"])
    env = _env(query["spec"]["template"]["spec"]["containers"][0])
    assert env["MEMSTRATA_WORKERS_BACKEND"] == "ray"
    assert "MEMSTRATA_WORKERS_RAY_AUTH_TOKEN" not in env


def test_without_ray_the_service_keeps_the_local_backend() -> None:
    for d in by_kind(render(DISTRIBUTED), "Deployment"):
        env = _env(d["spec"]["template"]["spec"]["containers"][0])
        assert "MEMSTRATA_WORKERS_BACKEND" not in env
