"""The chart's JWT values for `memstrata mcp` (issue 37): a JWKS from a ConfigMap, a Secret or
a URL, issuer and audience, and the platform key, rendered, validated and checked end to end
(the rendered settings verify a token signed by the test's identity provider)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk (the deploy extra)")
kubernetes_validate = pytest.importorskip("kubernetes_validate",
                                          reason="kubernetes-validate (the deploy extra)")

from tests.deploy.chart import CHART, DISTRIBUTED, by_kind, render  # noqa: E402
from tests.integration.mcp.jwt_keys import AUDIENCE, ISSUER, Idp  # noqa: E402

JWT: dict[str, Any] = {"enabled": True, "issuer": ISSUER, "audience": AUDIENCE,
                       "jwksConfigMap": "idp-jwks"}
PLATFORM = {"name": "memstrata-platform-key", "key": "api-key"}


def _values(base: dict[str, Any], **jwt: Any) -> dict[str, Any]:
    return {**base, "mcp": {"enabled": True, "apiKeySecret": PLATFORM, "jwt": {**JWT, **jwt}}}


def _mcp_pod(docs: list[dict]) -> dict:
    (dep,) = [d for d in by_kind(docs, "Deployment") if d["metadata"]["name"].endswith("-mcp")]
    return dep["spec"]["template"]["spec"]


def _settings(env: list[dict], jwks_file: Path | None = None):
    """McpSettings from the container's plain env (the JWKS path moved to ``jwks_file``)."""
    from memstrata.mcp.settings import McpSettings

    mp = pytest.MonkeyPatch()
    try:
        for e in env:
            if e["name"].startswith("MEMSTRATA_MCP_") and "value" in e:
                mp.setenv(e["name"], e["value"])
        if jwks_file is not None:
            mp.setenv("MEMSTRATA_MCP_JWT_JWKS_FILE", str(jwks_file))
        return McpSettings()
    finally:
        mp.undo()


@pytest.mark.parametrize("base", [{}, DISTRIBUTED], ids=["embedded", "distributed"])
def test_a_jwks_configmap_is_mounted_and_the_settings_verify_a_token(
        base: dict, tmp_path: Path) -> None:
    values = _values(base)
    report = helm_python.lint(str(CHART), values, strict=True)
    assert not [m for m in report["messages"] if m["severity"] >= 2] + report["errors"]
    docs = render(values)
    for doc in docs:
        if doc["kind"] in ("Deployment", "Service"):
            kubernetes_validate.validate(doc, kubernetes_validate.utils.latest_version(),
                                         strict=True)
    pod = _mcp_pod(docs)
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c["env"]}
    assert env["MEMSTRATA_MCP_JWT_JWKS_FILE"]["value"] == "/etc/memstrata/jwks/jwks.json"
    assert env["MEMSTRATA_API_KEY"]["valueFrom"] == {"secretKeyRef": PLATFORM}
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == "jwks"]
    assert mount == {"name": "jwks", "mountPath": "/etc/memstrata/jwks", "readOnly": True}
    (vol,) = [v for v in pod["volumes"] if v["name"] == "jwks"]
    assert vol["configMap"] == {"name": "idp-jwks",
                                "items": [{"key": "jwks.json", "path": "jwks.json"}]}

    settings = _settings(c["env"])
    assert settings.jwt_enabled and settings.jwt_issuer == ISSUER
    assert settings.jwt_audience == AUDIENCE and settings.jwt_algorithms == ["RS256", "ES256"]
    # The file the ConfigMap mounts, here: the rendered settings accept the IdP's token.
    from memstrata.mcp.jwt_auth import JwtVerifier, TokenRefused

    idp = Idp()
    verifier = JwtVerifier(_settings(c["env"], idp.write_jwks(tmp_path / "jwks.json")))
    claims = verifier.verify_now(idp.token())
    assert (claims.tenant, claims.user) == ("acme", "maya")
    with pytest.raises(TokenRefused):
        verifier.verify_now(idp.token(aud="someone-else"))


def test_a_jwks_secret_or_url_and_the_claim_values() -> None:
    pod = _mcp_pod(render(_values({}, jwksConfigMap="", jwksSecret="idp-jwks", jwksKey="k.json",
                                  tenantClaim="org", userRequired=False,
                                  algorithms=["ES384"])))
    (vol,) = [v for v in pod["volumes"] if v["name"] == "jwks"]
    assert vol["secret"]["secretName"] == "idp-jwks"
    assert vol["secret"]["items"] == [{"key": "k.json", "path": "k.json"}]
    s = _settings(pod["containers"][0]["env"])
    assert str(s.jwt_jwks_file) == "/etc/memstrata/jwks/k.json"
    assert s.jwt_tenant_claim == "org" and s.jwt_user_required is False
    assert s.jwt_algorithms == ["ES384"]

    pod = _mcp_pod(render(_values({}, jwksConfigMap="",
                                  jwksUrl="https://idp.example.com/jwks.json")))
    assert "jwks" not in {v["name"] for v in pod["volumes"]}
    s = _settings(pod["containers"][0]["env"])
    assert s.jwt_jwks_url == "https://idp.example.com/jwks.json" and s.jwt_jwks_file is None


def test_off_by_default_nothing_of_it_renders() -> None:
    pod = _mcp_pod(render({"mcp": {"enabled": True}}))
    names = {e["name"] for e in pod["containers"][0]["env"]}
    assert not {n for n in names if n.startswith("MEMSTRATA_MCP_JWT_")}
    assert "MEMSTRATA_API_KEY" not in names and "jwks" not in {v["name"] for v in pod["volumes"]}


@pytest.mark.parametrize(("jwt", "platform", "names"), [
    ({"jwksConfigMap": ""}, PLATFORM, "exactly one of mcp.jwt.jwksConfigMap"),
    ({"jwksSecret": "also"}, PLATFORM, "exactly one of mcp.jwt.jwksConfigMap"),
    ({"issuer": ""}, PLATFORM, "mcp.jwt.issuer is required"),
    ({"audience": ""}, PLATFORM, "mcp.jwt.audience is required"),
    ({}, {"name": ""}, "mcp.apiKeySecret.name"),
    ({"jwksConfigMap": "", "jwksUrl": "http://idp.example.com/jwks"}, PLATFORM, "jwksUrl"),
    ({"algorithms": ["HS256"]}, PLATFORM, "algorithms"),
    ({"typo": 1}, PLATFORM, "typo"),
], ids=["no-jwks", "two-jwks", "issuer", "audience", "platform-key", "http-url", "hs256",
        "typo"])
def test_incomplete_or_unsafe_jwt_values_are_refused(jwt: dict, platform: dict,
                                                     names: str) -> None:
    values = {"mcp": {"enabled": True, "apiKeySecret": platform, "jwt": {**JWT, **jwt}}}
    with pytest.raises(helm_python.HelmError) as info:
        render(values)
    assert names in str(info.value)
