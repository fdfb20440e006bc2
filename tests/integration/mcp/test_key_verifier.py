"""The key check behind the MCP server's bearer tokens, and the scope of a tool call.

No server here: a test double stands in for the service's answer to
``GetStats`` so the cache's timing is exact (an injected clock).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install -e '.[all,test]')")

from memstrata.client.errors import RateLimited, RemoteError, Unauthenticated
from memstrata.mcp.access import CannotVerify, KeyVerifier, ToolRefused, scope_for
from memstrata.mcp.settings import McpSettings
from memstrata.roles import MemoryStats


@dataclass
class FakeService:
    """Test double of the service: which keys are valid, and how often it was asked."""

    tenants: dict[str, str]
    asked: list[str] = field(default_factory=list)
    failure: Exception | None = None


@dataclass
class FakeClient:
    service: FakeService
    key: str

    async def describe_key(self) -> MemoryStats:
        """Stands for the DescribeKey RPC: only ``tenant_id`` is read."""
        self.service.asked.append(self.key)
        if self.service.failure is not None:
            raise self.service.failure
        if self.key not in self.service.tenants:
            raise Unauthenticated(grpc.StatusCode.UNAUTHENTICATED, "invalid or revoked key")
        return MemoryStats(tenant_id=self.service.tenants[self.key])


@dataclass
class FakePool:
    service: FakeService
    size: int = 8

    def get(self, key: str) -> Any:
        return FakeClient(self.service, key)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _verifier(service: FakeService, ttl_s: float = 30.0) -> tuple[KeyVerifier, Clock]:
    clock = Clock()
    return KeyVerifier(FakePool(service), ttl_s, clock=clock), clock  # type: ignore[arg-type]


def test_a_key_is_checked_once_per_ttl_and_carries_its_tenant() -> None:
    service = FakeService({"msk_a1_secret": "acme"})
    v, clock = _verifier(service)
    token = asyncio.run(v.verify_token("msk_a1_secret"))
    assert token is not None and token.claims is not None
    assert (token.claims["tenant"], token.claims["user"]) == ("acme", None)
    assert token.client_id == "memstrata-key:a1"  # the key's id, never its secret
    asyncio.run(v.verify_token("msk_a1_secret"))
    assert service.asked == ["msk_a1_secret"]
    clock.now += 31
    asyncio.run(v.verify_token("msk_a1_secret"))
    assert service.asked == ["msk_a1_secret"] * 2


def test_a_keys_bound_user_and_scopes_come_with_its_tenant() -> None:
    from memstrata.client.plan import KeyInfo

    class Described(FakeClient):
        async def describe_key(self) -> KeyInfo:  # type: ignore[override]
            return KeyInfo("k1", "acme", ("acme",), ("read",), "maya")

    class Pool(FakePool):
        def get(self, key: str) -> Any:
            return Described(self.service, key)

    v = KeyVerifier(Pool(FakeService({})), 30.0)  # type: ignore[arg-type]
    grant = asyncio.run(v.grant_of("msk_k1_secret"))
    assert grant is not None and (grant.tenant, grant.user, grant.scopes) == (
        "acme", "maya", {"read"})
    token = asyncio.run(v.verify_token("msk_k1_secret"))
    assert token is not None and token.scopes == ["read"] and token.claims["user"] == "maya"


def test_a_refused_key_is_none_and_forget_asks_again_at_once() -> None:
    service = FakeService({"good": "acme"})
    v, _ = _verifier(service)
    assert asyncio.run(v.verify_token("bad")) is None
    assert asyncio.run(v.tenant_of("good")) == "acme"
    del service.tenants["good"]  # revoked while cached
    assert asyncio.run(v.tenant_of("good")) == "acme"
    v.forget("good")  # a tool call saw UNAUTHENTICATED
    assert asyncio.run(v.tenant_of("good")) is None


def test_tokens_that_cannot_be_keys_never_reach_the_service() -> None:
    service = FakeService({})
    v, _ = _verifier(service)
    for token in ("", "x" * 513, "msk_a\nb"):
        assert asyncio.run(v.verify_token(token)) is None
    assert service.asked == []


def test_a_service_that_cannot_answer_is_neither_yes_nor_no() -> None:
    service = FakeService({"k": "acme"}, failure=RemoteError(grpc.StatusCode.UNAVAILABLE, "down"))
    v, clock = _verifier(service, ttl_s=5)
    with pytest.raises(CannotVerify) as down:
        asyncio.run(v.tenant_of("k"))
    assert down.value.status == 503
    service.failure = None
    assert asyncio.run(v.tenant_of("k")) == "acme"  # nothing was cached while it was down
    clock.now += 6
    service.failure = RateLimited(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate", 2.0)
    assert asyncio.run(v.tenant_of("k")) == "acme"  # authenticated, then limited
    with pytest.raises(CannotVerify) as limited:
        asyncio.run(v.tenant_of("never-seen"))
    assert (limited.value.status, limited.value.retry_after_s) == (429, 2.0)


def test_an_unreachable_service_answers_503_not_401() -> None:
    """The real app in-process, its service address closed: a client keeps its key."""
    from starlette.testclient import TestClient

    from memstrata.client.settings import ClientSettings
    from memstrata.mcp.server import build, http_app
    from streams.broker import free_port

    settings = McpSettings()
    app = http_app(build(settings, f"127.0.0.1:{free_port()}", ClientSettings()), settings)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Host": "127.0.0.1:8000"}
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        r = client.post("/mcp", json=body, headers={**headers, "Authorization": "Bearer msk_a_b"})
        assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
        assert "could not check the key (UNAVAILABLE)" in r.json()["error_description"]
        assert client.post("/mcp", json=body, headers=headers).status_code == 401
        assert client.get("/healthz").json() == {"status": "ok"}


def test_the_user_is_bound_or_named_and_the_tenant_is_the_keys() -> None:
    free = McpSettings.model_construct(user=None)
    assert scope_for(free, "acme", "maya").model_dump() == {"tenant_id": "acme",
                                                           "user_id": "maya"}
    with pytest.raises(ToolRefused, match="user: required"):
        scope_for(free, "acme", None)
    with pytest.raises(ToolRefused, match="user: 1 to 128"):
        scope_for(free, "acme", "maya smith")
    bound = McpSettings.model_construct(user="maya")
    assert scope_for(bound, "acme", None).user_id == "maya"
    assert scope_for(bound, "acme", "maya").user_id == "maya"
    with pytest.raises(ToolRefused, match="acts for one user only"):
        scope_for(bound, "acme", "leo")


def test_settings_split_host_lists_and_refuse_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_MCP_ALLOWED_HOSTS", "mcp.example.com, mcp:*")
    s = McpSettings()
    assert s.hosts()[-2:] == ["mcp.example.com", "mcp:*"] and "127.0.0.1:*" in s.hosts()
    monkeypatch.setenv("MEMSTRATA_MCP_ALLOWED_HOSTS", "mcp.example.com/path")
    with pytest.raises(ValueError, match="no spaces or paths"):
        McpSettings()
    monkeypatch.delenv("MEMSTRATA_MCP_ALLOWED_HOSTS")
    assert McpSettings().allow_delete is False and McpSettings().user is None
