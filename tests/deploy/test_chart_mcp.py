"""The chart's MCP server switch: off by default; on, a locked-down Deployment and Service
whose settings memstrata accepts, reachable through the network policy."""

from __future__ import annotations

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk (the deploy extra)")
pytest.importorskip("kubernetes_validate", reason="kubernetes-validate (the deploy extra)")

from tests.deploy.chart import DISTRIBUTED, by_kind, notes, render  # noqa: E402


def _mcp(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in by_kind(docs, kind) if d["metadata"]["name"].endswith("-mcp")]


def test_the_mcp_server_is_off_by_default() -> None:
    for values in ({}, DISTRIBUTED):
        docs = render(values)
        assert not _mcp(docs, "Deployment") and not _mcp(docs, "Service")


@pytest.mark.parametrize("values", [{}, DISTRIBUTED], ids=["embedded", "distributed"])
def test_enabled_it_serves_streamable_http_against_the_service(values: dict) -> None:
    docs = render({**values, "mcp": {"enabled": True, "replicas": 3, "port": 8100,
                                     "allowedHosts": ["mcp.example.com"], "user": "maya",
                                     "allowDelete": True}})
    (dep,), (svc,) = _mcp(docs, "Deployment"), _mcp(docs, "Service")
    assert dep["spec"]["replicas"] == 3  # stateless: no session affinity needed
    assert "sessionAffinity" not in svc["spec"] or svc["spec"]["sessionAffinity"] == "None"
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["args"] == ["mcp", "--transport", "streamable-http", "--host", "0.0.0.0",
                         "--port", "8100"]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["MEMSTRATA_API_ADDRESS"] == "rel-memstrata:50051"
    hosts = env["MEMSTRATA_MCP_ALLOWED_HOSTS"].split(",")
    assert {"rel-memstrata-mcp:*", "rel-memstrata-mcp.memory.svc.cluster.local:*",
            "mcp.example.com"} <= set(hosts)
    assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert svc["spec"]["ports"][0]["port"] == 8100
    assert "keys" not in {v["name"] for v in pod["volumes"]}  # the service checks keys

    from memstrata.mcp.settings import McpSettings

    mp = pytest.MonkeyPatch()
    try:
        for k, v in env.items():
            if k.startswith("MEMSTRATA_MCP_"):
                mp.setenv(k, v)
        s = McpSettings()
    finally:
        mp.undo()
    assert s.user == "maya" and s.allow_delete is True and "mcp.example.com" in s.hosts()
    assert "/mcp" in notes({**values, "mcp": {"enabled": True}})


def test_the_network_policy_lets_mcp_in_and_through_to_grpc() -> None:
    docs = render({"networkPolicy": {"enabled": True, "grpcFrom": [
        {"namespaceSelector": {"matchLabels": {"team": "chat"}}}]},
        "mcp": {"enabled": True, "from": [{"podSelector": {"matchLabels": {"app": "agent"}}}]}})
    (policy,) = by_kind(docs, "NetworkPolicy")
    rules = policy["spec"]["ingress"]
    grpc = next(r for r in rules if r["ports"][0]["port"] == 50051)
    assert {"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "memstrata", "app.kubernetes.io/instance": "rel",
        "app.kubernetes.io/component": "mcp"}}} in grpc["from"]
    mcp = next(r for r in rules if r["ports"][0]["port"] == 8000)
    assert mcp["from"] == [{"podSelector": {"matchLabels": {"app": "agent"}}}]


@pytest.mark.parametrize(("values", "field"), [
    ({"mcp": {"enabled": True, "port": 0}}, "port"),
    ({"mcp": {"enabled": True, "user": "two words"}}, "user"),
    ({"mcp": {"enabled": True, "allowedOrigins": ["attacker.example"]}}, "allowedOrigins"),
    ({"mcp": {"typo": True}}, "typo"),
])
def test_schema_rejects_bad_mcp_values(values: dict, field: str) -> None:
    with pytest.raises(helm_python.HelmError) as info:
        render(values)
    assert field in str(info.value)
