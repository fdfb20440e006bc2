"""The Helm chart: lints, renders every shape, validates strictly, refuses bad values."""

from __future__ import annotations

import copy
import re

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk (the deploy extra)")
kubernetes_validate = pytest.importorskip("kubernetes_validate",
                                          reason="kubernetes-validate (the deploy extra)")

from tests.deploy.chart import (  # noqa: E402
    CHART,
    DISTRIBUTED,
    SHAPES,
    by_kind,
    notes,
    pod_specs,
    render,
)


def _newest_versions(n: int = 2) -> list[str]:
    """The n newest minor Kubernetes versions kubernetes-validate knows."""
    from kubernetes_validate.utils import all_versions

    minors: dict[tuple[int, int], str] = {}
    for v in all_versions():
        major, minor, *_ = (int(x) for x in v.split("."))
        minors[(major, minor)] = v
    return [minors[k] for k in sorted(minors)[-n:]]


K8S_VERSIONS = _newest_versions()


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict]]:
    return {name: render(values) for name, values in SHAPES.items()}


def test_chart_lints_strictly_for_every_shape() -> None:
    for name, values in SHAPES.items():
        report = helm_python.lint(str(CHART), values, strict=True)
        bad = [m for m in report["messages"] if m["severity"] >= 2] + report["errors"]
        assert not bad, (name, bad)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_manifest_validates_strictly(rendered: dict[str, list[dict]], version: str) -> None:
    from kubernetes_validate.utils import SchemaNotFoundError

    checked = 0
    for shape, docs in rendered.items():
        for doc in docs:
            where = f"{shape}: {doc['kind']}/{doc['metadata']['name']} on {version}"
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except SchemaNotFoundError:
                # CRDs (ServiceMonitor, PrometheusRule, RayCluster): no schema shipped.
                assert doc["apiVersion"].split("/")[0] in (
                    "monitoring.coreos.com", "ray.io"), where
                continue
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{where}: {exc.message} at {list(exc.path)}")
            checked += 1
    assert checked >= 20


def test_shapes_render_the_expected_objects(rendered: dict[str, list[dict]]) -> None:
    kinds = {name: sorted(d["kind"] for d in docs) for name, docs in rendered.items()}
    emb = kinds["embedded-defaults"]
    assert emb.count("StatefulSet") == 1 and "Deployment" not in emb
    assert "HorizontalPodAutoscaler" not in emb  # one writer: nothing to scale
    assert "NetworkPolicy" not in emb and "ServiceMonitor" not in emb
    flags = kinds["embedded-all-flags"]
    assert {"NetworkPolicy", "ServiceMonitor", "PrometheusRule"} <= set(flags)
    dist = kinds["distributed"]
    assert dist.count("Deployment") == 2 and "StatefulSet" not in dist
    assert dist.count("HorizontalPodAutoscaler") == 2 and dist.count("PodDisruptionBudget") == 2
    assert "RayCluster" not in dist
    assert "HorizontalPodAutoscaler" not in kinds["distributed-no-hpa"]
    assert "RayCluster" in kinds["distributed-ray-all-flags"]
    sts = by_kind(rendered["embedded-defaults"], "StatefulSet")[0]
    assert sts["spec"]["replicas"] == 1
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"


def test_pods_are_locked_down(rendered: dict[str, list[dict]]) -> None:
    for shape, docs in rendered.items():
        for owner, spec in pod_specs(docs):
            where = f"{shape}: {owner}"
            assert spec["securityContext"]["runAsNonRoot"] is True, where
            assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", where
            assert spec["automountServiceAccountToken"] is False, where
            assert spec["topologySpreadConstraints"], where
            for tsc in spec["topologySpreadConstraints"]:
                assert all(tsc["labelSelector"]["matchLabels"].values()), where
            for c in spec["containers"]:
                sc = c["securityContext"]
                assert sc["readOnlyRootFilesystem"] is True, where
                assert sc["allowPrivilegeEscalation"] is False, where
                assert sc["capabilities"]["drop"] == ["ALL"], where
                assert sc["seccompProfile"]["type"] == "RuntimeDefault", where
                assert c["resources"]["requests"] and c["resources"]["limits"], where
                assert "env" not in c or not any("value" in e and "KEY" in e["name"]
                                                 for e in c["env"]), where
                mounts = {m["mountPath"] for m in c["volumeMounts"]}
                assert {"/data", "/tmp"} <= mounts, where  # writable places on a read-only root


def test_query_pods_have_grpc_probes_and_a_grace_period_above_drain(
        rendered: dict[str, list[dict]]) -> None:
    for shape in ("embedded-defaults", "distributed"):
        for owner, spec in pod_specs(rendered[shape]):
            if "stream-worker" in owner:
                c = spec["containers"][0]
                assert c["livenessProbe"]["httpGet"]["path"] == "/metrics"
            else:
                c = spec["containers"][0]
                for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                    assert c[probe]["grpc"]["port"] == 50051, (shape, owner, probe)
                assert c["readinessProbe"]["grpc"]["service"] == "memstrata.v1.MemoryService"
            # Default grace 10 s, drain 60 s: Kubernetes must wait longer than both.
            assert spec["terminationGracePeriodSeconds"] > 60


def test_grace_period_follows_the_settings_and_refuses_a_short_one() -> None:
    values = {"config": {"MEMSTRATA_SERVICE_GRACE_S": "200",
                         "MEMSTRATA_STREAM_DRAIN_TIMEOUT_S": "30"}}
    sts = by_kind(render(values), "StatefulSet")[0]
    assert sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 215
    with pytest.raises(helm_python.HelmError, match="terminationGracePeriodSeconds"):
        render({"terminationGracePeriodSeconds": 30})


def test_configmap_keys_are_real_settings(rendered: dict[str, list[dict]]) -> None:
    from memstrata.config import ENV_PREFIX, Settings, settings_namespaces

    known = {ENV_PREFIX + n.upper() for n in Settings.model_fields}
    for prefix, cls in settings_namespaces()[0].items():
        known |= {prefix + n.upper() for n in cls.model_fields}
    seen = set()
    for shape, docs in rendered.items():
        for cm in by_kind(docs, "ConfigMap"):
            for key in cm["data"]:
                assert key in known, f"{shape}: ConfigMap key {key} is not a memstrata setting"
                seen.add(key)
    assert {"MEMSTRATA_KAFKA_BROKERS", "MEMSTRATA_QDRANT_URL", "MEMSTRATA_SERVICE_PORT",
            "MEMSTRATA_STREAM_METRICS_PORT"} <= seen


def test_configmap_values_pass_the_settings_validation(rendered: dict[str, list[dict]]) -> None:
    """The rendered distributed ConfigMap is a configuration memstrata accepts."""
    from memstrata.config import load_settings

    cm = by_kind(rendered["distributed"], "ConfigMap")[0]["data"]
    mp = pytest.MonkeyPatch()
    try:
        for key, value in cm.items():
            mp.setenv(key, value)
        s = load_settings()
        assert s.vector_backend == "qdrant" and s.lexical_backend == "opensearch"
    finally:
        mp.undo()


def test_secrets_only_by_reference(rendered: dict[str, list[dict]]) -> None:
    for shape, docs in rendered.items():
        assert not by_kind(docs, "Secret"), shape
        for cm in by_kind(docs, "ConfigMap"):
            for key in cm["data"]:
                assert not re.search(r"PASSWORD|API_KEY|SECRET", key), (shape, key)
    pod = dict(pod_specs(rendered["distributed"]))
    c = next(iter(pod.values()))["containers"][0]
    assert {"secretRef": {"name": "memstrata-env"}} in c["envFrom"]


def test_checksum_annotation_changes_with_the_config() -> None:
    def checksum(values: dict) -> str:
        sts = by_kind(render(values), "StatefulSet")[0]
        return sts["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum({}) != checksum({"config": {"MEMSTRATA_LLM_BACKEND": "extractive",
                                                "MEMSTRATA_TOP_K_SESSIONS": "10"}})


def test_prometheus_rule_is_the_committed_rule_file(rendered: dict[str, list[dict]]) -> None:
    import yaml

    from tests.deploy.chart import ROOT

    committed = ROOT / "infra" / "prometheus" / "rules" / "memstrata.rules.yml"
    copy_in_chart = CHART / "files" / "memstrata.rules.yml"
    assert copy_in_chart.read_text() == committed.read_text(), \
        "cp infra/prometheus/rules/memstrata.rules.yml helm/memstrata/files/"
    rule = by_kind(rendered["embedded-all-flags"], "PrometheusRule")[0]
    assert rule["spec"] == yaml.safe_load(committed.read_text())


def test_notes_name_the_next_steps() -> None:
    text = notes({})
    assert "port-forward" in text and "keysSecret" in text
    assert "RayCluster" in notes({**DISTRIBUTED, "ray": {"enabled": True, "auth": {
        "existingSecret": "memstrata-ray"}}})


BAD_VALUES = [
    ({"mode": "cluster"}, "mode"),
    ({"service": {"grpcPort": 70000}}, "grpcPort"),
    ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    ({"config": {"LLM_BACKEND": "openai"}}, "LLM_BACKEND"),
    ({"containerSecurityContext": {"readOnlyRootFilesystem": False}}, "readOnlyRootFilesystem"),
    ({"embedded": {"persistence": {"size": "lots"}}}, "size"),
    ({"distributed": {"kafkaBrokers": "kafka without port"}}, "kafkaBrokers"),
    ({"distributed": {"queryService": {"autoscaling": {
        "enabled": True, "minReplicas": 0, "maxReplicas": 3,
        "targetCPUUtilizationPercentage": 70}}}}, "minReplicas"),
    ({"typo": True}, "typo"),
    ({"terminationGracePeriodSeconds": "soon"}, "terminationGracePeriodSeconds"),
]


@pytest.mark.parametrize(("values", "field"), BAD_VALUES, ids=[f for _, f in BAD_VALUES])
def test_schema_rejects_bad_values(values: dict, field: str) -> None:
    with pytest.raises(helm_python.HelmError) as info:
        render(values)
    assert field in str(info.value)


def test_distributed_requires_its_endpoints() -> None:
    values = copy.deepcopy(DISTRIBUTED)
    values["distributed"]["qdrantUrl"] = ""
    with pytest.raises(helm_python.HelmError, match="qdrantUrl"):
        render(values)
