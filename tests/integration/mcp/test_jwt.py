"""Bearer JWTs for the MCP server: every check refuses by name, a good token maps to its grant.

No service and no network beyond loopback: keys are generated here
(tests/integration/mcp/jwt_keys.py), the JWKS is a file or a loopback HTTP
server, and the HTTP layer runs in-process (Starlette's test client). The
same tokens against a real service: test_mcp_server.py (``jwt`` server).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install -e '.[all,test]')")

from memstrata.mcp.jwt_auth import JwtVerifier, TokenRefused
from memstrata.mcp.settings import McpSettings
from tests.integration.mcp.jwt_keys import AUDIENCE, ISSUER, Idp


@pytest.fixture(scope="module")
def idp() -> Idp:
    return Idp()


@pytest.fixture(scope="module")
def jwks_file(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return idp.write_jwks(tmp_path_factory.mktemp("jwks") / "jwks.json")


def _settings(jwks: Path, **over: Any) -> McpSettings:
    return McpSettings(jwt_jwks_file=jwks, jwt_issuer=ISSUER, jwt_audience=AUDIENCE, **over)


@pytest.fixture(scope="module")
def verifier(jwks_file: Path) -> JwtVerifier:
    return JwtVerifier(_settings(jwks_file))


def _refused(verifier: JwtVerifier, token: str) -> TokenRefused:
    with pytest.raises(TokenRefused) as caught:
        verifier.verify_now(token)
    return caught.value


def test_a_valid_token_grants_its_tenant_user_and_scopes(idp: Idp, verifier: JwtVerifier
                                                         ) -> None:
    grant = asyncio.run(verifier.verify(idp.token(scope="read write admin")))
    assert (grant.tenant, grant.user, grant.subject) == ("acme", "maya", "agent-1")
    assert grant.scopes == {"read", "write"}  # unknown scopes are dropped
    assert verifier.verify_now(idp.token(scope=["read", "delete"])).scopes == {"read", "delete"}


@pytest.mark.parametrize(("over", "check"), [
    ({"exp": -120}, "exp"),                      # expired past the 30 s leeway
    ({"nbf": 600}, "nbf"),                       # not valid for ten minutes
    ({"iss": "https://evil.test.invalid/"}, "iss"),
    ({"aud": "another-service"}, "aud"),
    ({"exp": None}, "exp"),                      # a token that never expires
    ({"iss": None}, "iss"),
    ({"aud": None}, "aud"),
    ({"tenant": None}, "tenant"),
    ({"user": None}, "user"),
    ({"scope": None}, "scope"),
    ({"tenant": "acme tenant"}, "tenant"),       # not an identifier
    ({"scope": 7}, "scope"),
])
def test_each_failed_check_is_refused_by_name(idp: Idp, verifier: JwtVerifier,
                                              over: dict[str, Any], check: str) -> None:
    now = int(time.time())
    shifted = {k: now + v if k in ("exp", "nbf") and isinstance(v, int) else v
               for k, v in over.items()}
    assert _refused(verifier, idp.token(**shifted)).check == check


def test_within_the_leeway_a_just_expired_token_still_passes(idp: Idp,
                                                             verifier: JwtVerifier) -> None:
    assert verifier.verify_now(idp.token(exp=int(time.time()) - 5)).tenant == "acme"


def test_a_bad_signature_is_refused(idp: Idp, verifier: JwtVerifier) -> None:
    forged = idp.token(signer=idp.stranger)  # right kid, wrong key
    assert _refused(verifier, forged).check == "signature"
    # A valid token whose payload was swapped for another tenant's.
    head, _, sig = idp.token().split(".")
    body = base64.urlsafe_b64encode(json.dumps(idp.claims(tenant="globex")).encode())
    assert _refused(verifier, f"{head}.{body.decode().rstrip('=')}.{sig}").check == "signature"
    assert _refused(verifier, idp.token(headers={"kid": "k9"})).check == "kid"


def test_alg_none_and_hmac_with_the_public_key_are_refused(idp: Idp,
                                                           verifier: JwtVerifier) -> None:
    unsigned = jwt.encode(idp.claims(), None, algorithm="none", headers={"kid": idp.kid})
    refused = _refused(verifier, unsigned)
    assert refused.check == "alg" and "'none' is not accepted" in str(refused)
    public_pem = idp.jwks()["keys"][0]["x"].encode()  # any bytes an attacker can read
    hmac = jwt.encode(idp.claims(), public_pem, algorithm="HS256", headers={"kid": idp.kid})
    assert _refused(verifier, hmac).check == "alg"
    assert _refused(verifier, "not.a.jwt").check == "format"


def test_settings_refuse_weak_algorithms_and_half_configurations(jwks_file: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    for bad in ("none", "HS256", "RS256,HS512"):
        monkeypatch.setenv("MEMSTRATA_MCP_JWT_ALGORITHMS", bad)
        with pytest.raises(ValueError, match="never none or HS"):
            _settings(jwks_file)
    monkeypatch.delenv("MEMSTRATA_MCP_JWT_ALGORITHMS")
    with pytest.raises(ValueError, match="MEMSTRATA_MCP_JWT_AUDIENCE: required"):
        McpSettings(jwt_jwks_file=jwks_file, jwt_issuer=ISSUER)
    with pytest.raises(ValueError, match="http:// on loopback"):
        McpSettings(jwt_jwks_url="http://idp.example.com/jwks", jwt_issuer=ISSUER,
                    jwt_audience=AUDIENCE)
    assert not McpSettings().jwt_enabled


def test_tenant_wide_tokens_only_when_allowed(idp: Idp, jwks_file: Path) -> None:
    wide = JwtVerifier(_settings(jwks_file, jwt_user_required=False))
    assert wide.verify_now(idp.token(user=None)).user is None
    custom = JwtVerifier(_settings(jwks_file, jwt_tenant_claim="org", jwt_user_claim="sub",
                                   jwt_scopes_claim="perms"))
    grant = custom.verify_now(idp.token(org="globex", perms=["read"]))
    assert (grant.tenant, grant.user, grant.scopes) == ("globex", "agent-1", {"read"})


def test_a_rotated_jwks_file_is_read_again(idp: Idp, tmp_path: Path) -> None:
    path = idp.write_jwks(tmp_path / "jwks.json")
    v = JwtVerifier(_settings(path))
    assert v.verify_now(idp.token()).tenant == "acme"
    rotated = Idp(kid="k2")
    rotated.write_jwks(path)
    assert v.verify_now(rotated.token()).tenant == "acme"
    assert _refused(v, idp.token()).check == "kid"  # the old key is gone


@pytest.fixture
def jwks_server(idp: Idp) -> Iterator[str]:
    """A loopback HTTP server handing out the JWKS (and counting how often)."""
    body = json.dumps(idp.jwks()).encode()
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks"
    finally:
        server.shutdown()
        server.server_close()


def test_a_jwks_url_on_loopback_is_fetched_and_cached(idp: Idp, jwks_server: str) -> None:
    v = JwtVerifier(McpSettings(jwt_jwks_url=jwks_server, jwt_issuer=ISSUER,
                                jwt_audience=AUDIENCE))
    assert asyncio.run(v.verify(idp.token())).user == "maya"
    assert asyncio.run(v.verify(idp.token(user="leo"))).user == "leo"
    with pytest.raises(TokenRefused, match="exp"):
        asyncio.run(v.verify(idp.token(exp=int(time.time()) - 3600)))


def test_over_http_a_refused_token_gets_401_naming_the_check(idp: Idp, jwks_file: Path
                                                             ) -> None:
    """The real app in-process: the refusal reaches the client with the failed check."""
    from starlette.testclient import TestClient

    from memstrata.client.settings import ClientSettings
    from memstrata.mcp.server import build, http_app
    from streams.broker import free_port

    settings = _settings(jwks_file)
    client_settings = ClientSettings(key="msk_platform_secret")  # never reached here
    app = http_app(build(settings, f"127.0.0.1:{free_port()}", client_settings), settings)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Host": "127.0.0.1:8000"}
    cases = {"exp": idp.token(exp=int(time.time()) - 3600), "iss": idp.token(iss="x"),
             "aud": idp.token(aud="x"), "signature": idp.token(signer=idp.stranger),
             "alg": jwt.encode(idp.claims(), None, algorithm="none"),
             "tenant": idp.token(tenant=None)}
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        for check, token in cases.items():
            r = client.post("/mcp", json=body,
                            headers={**headers, "Authorization": f"Bearer {token}"})
            assert r.status_code == 401, (check, r.text)
            assert r.json()["error_description"].startswith(f"JWT refused: {check}:"), r.text
            assert f'error_description="JWT refused: {check}:' in r.headers["www-authenticate"]
        ok = client.post("/mcp", json=body,
                         headers={**headers, "Authorization": f"Bearer {idp.token()}"})
        assert ok.status_code == 200, ok.text


def test_jwts_need_a_platform_key_to_reach_the_service(jwks_file: Path) -> None:
    from memstrata.client.settings import ClientSettings
    from memstrata.mcp.server import build

    with pytest.raises(ValueError, match="MEMSTRATA_API_KEY: required"):
        build(_settings(jwks_file), "127.0.0.1:1", ClientSettings())
