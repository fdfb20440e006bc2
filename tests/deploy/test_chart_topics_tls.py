"""The chart's topics hook Job and TLS on the gRPC port (issue 37, item 4).

Strict lint and Kubernetes validation of these shapes run in test_chart.py
(``distributed-grpc-tls`` and ``embedded-grpc-tls`` are in ``SHAPES``); the Job's
command runs against the tansu broker in
tests/integration/streams/test_topics_admin.py.
"""

from __future__ import annotations

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk (the deploy extra)")

from tests.deploy.chart import SHAPES, by_kind, pod_specs, render  # noqa: E402

PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def _job(docs: list[dict]) -> dict:
    [job] = by_kind(docs, "Job")
    return job


def test_distributed_renders_a_pre_install_and_pre_upgrade_topics_job() -> None:
    docs = render(SHAPES["distributed-grpc-tls"])
    job = _job(docs)
    hooks = job["metadata"]["annotations"]
    assert set(hooks["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert "before-hook-creation" in hooks["helm.sh/hook-delete-policy"]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and "serviceAccountName" not in pod
    [c] = pod["containers"]
    assert c["args"] == ["topics", "create"]
    # A pre-install hook runs before the ConfigMap exists: the same data, inline.
    [cm] = by_kind(docs, "ConfigMap")
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env == cm["data"]
    assert env["MEMSTRATA_KAFKA_PARTITIONS"] == "12" and env["MEMSTRATA_KAFKA_REPLICATION"] == "3"
    assert c["envFrom"] == [{"secretRef": {"name": "memstrata-env"}}]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True


def test_no_topics_job_when_embedded_or_disabled() -> None:
    assert not by_kind(render(SHAPES["embedded-grpc-tls"]), "Job")
    assert not by_kind(render({**SHAPES["distributed"], "topics": {"enabled": False}}), "Job")


@pytest.mark.parametrize("shape", ["distributed-grpc-tls", "embedded-grpc-tls"])
def test_grpc_tls_mounts_the_secret_and_probes_with_tls(shape: str) -> None:
    docs = render(SHAPES[shape])
    mtls = "clientCaKey" in SHAPES[shape]["grpcTls"]
    [cm] = by_kind(docs, "ConfigMap")
    assert cm["data"]["MEMSTRATA_SERVICE_TLS_CERT"] == "/etc/memstrata/grpc-tls/tls.crt"
    assert cm["data"]["MEMSTRATA_SERVICE_TLS_KEY"] == "/etc/memstrata/grpc-tls/tls.key"
    assert ("MEMSTRATA_SERVICE_TLS_CLIENT_CA" in cm["data"]) is mtls
    serving = [(o, s) for o, s in pod_specs(docs) if "stream-worker" not in o]
    assert serving
    for owner, spec in serving:
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["grpc-tls"]["secret"]["secretName"] == "memstrata-grpc", owner
        c = spec["containers"][0]
        assert {"name": "grpc-tls", "mountPath": "/etc/memstrata/grpc-tls",
                "readOnly": True} in c["volumeMounts"]
        for probe in PROBES:
            assert "grpc" not in c[probe], (owner, probe)  # the kubelet's cannot do TLS
            cmd = c[probe]["exec"]["command"]
            assert cmd[:3] == ["/opt/memstrata/bin/python", "-m", "memstrata.client.health_probe"]
            assert "--ca" in cmd and "--server-name" in cmd
            assert ("--cert" in cmd) is mtls, (owner, probe)
        assert "memstrata.v1.MemoryService" in c["readinessProbe"]["exec"]["command"]


def test_plaintext_keeps_the_kubelet_grpc_probes() -> None:
    for owner, spec in pod_specs(render(SHAPES["distributed"])):
        if "stream-worker" not in owner:
            c = spec["containers"][0]
            assert all("exec" not in c[p] and c[p]["grpc"]["port"] == 50051 for p in PROBES)


@pytest.mark.parametrize(("values", "field"), [
    ({"grpcTls": {"secret": "Not_A_Name"}}, "secret"),
    ({"topics": {"backoffLimit": -1}}, "backoffLimit"),
    ({"topics": {"typo": 1}}, "typo"),
])
def test_schema_rejects_bad_tls_and_topics_values(values: dict, field: str) -> None:
    with pytest.raises(helm_python.HelmError) as info:
        render(values)
    assert field in str(info.value)
