"""A real ``memstrata serve`` and ``memstrata mcp`` servers in front of it, for the MCP tests.

One serve (real gRPC, embedded broker and stream worker) over a fresh data dir
holding the README's sample turns, ingested through the service with each
tenant's key; then MCP servers started as a user starts them, each with its own
``MEMSTRATA_MCP_*`` settings. The SDK's own client talks to them over HTTP on
127.0.0.1 (:func:`session`), with a hook that records every HTTP status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams.broker import _die_with_parent, free_port
from tests.integration.mcp.jwt_keys import AUDIENCE, ISSUER, Idp
from tests.support.serve_proc import QUICK_JOIN, ServeProcess, add_key

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "sample_turns.jsonl"


@dataclass
class McpProcess:
    """``python -m memstrata mcp --transport streamable-http`` on a free port."""

    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> "McpProcess":
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memstrata", "mcp", "--transport", "streamable-http",
             "--port", str(self.port)],
            env={**os.environ, **self.env}, stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=self._log, preexec_fn=_die_with_parent())
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def wait_up(self, timeout_s: float = 60) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"mcp exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz",
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"mcp not up after {timeout_s} s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def sample_events(tenant: str) -> list[Any]:
    """The sample file's turns of one tenant, as the client sends them."""
    from memstrata.rpc import memory_pb2 as pb

    events = []
    for line in SAMPLE.read_text().splitlines():
        r = json.loads(line)
        if r["tenant_id"] == tenant:
            events.append(pb.TurnEvent(user_id=r["user_id"], session_id=r["session_id"],
                                       message_id=r["message_id"], role=r["role"],
                                       content=r["content"], session_date=r["session_date"]))
    return events


def wait_searchable(address: str, key: str, tenant: str, user: str, query: str,
                    session_id: str, timeout_s: float = 60) -> None:
    from memstrata.client import MemoryClient
    from memstrata.model import Scope

    scope = Scope(tenant_id=tenant, user_id=user)
    with MemoryClient(address, api_key=key) as client:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if session_id in [h.session_id for h in client.search(scope, query)]:
                return
            time.sleep(0.2)
    raise AssertionError(f"{session_id} of {tenant}/{user} never became searchable")


@dataclass
class Stack:
    data: Path
    serve: ServeProcess
    keys: dict[str, str]
    servers: dict[str, McpProcess]
    #: Signs the tokens the ``jwt`` server accepts.
    idp: Idp = field(default_factory=Idp)

    def keys_file(self) -> Path:
        from memstrata.cli.access import DEFAULT_KEYS_FILE

        return self.data / DEFAULT_KEYS_FILE


def start(tmp: Path) -> Stack:
    """Keys, serve, the sample ingested, and the MCP servers (started while serve starts)."""
    data = tmp / "data"
    data.mkdir()
    keys = {"acme": add_key(data, "acme"), "globex": add_key(data, "globex"),
            "acme-revoked": add_key(data, "acme"), "tiny": add_key(data, "tiny")}
    from query_service.keys import TenantPolicy, set_tenant_policy

    from memstrata.cli.access import DEFAULT_KEYS_FILE

    # One call per 2 s after a burst of 2: the key check takes one, a tool call the other.
    set_tenant_policy(data / DEFAULT_KEYS_FILE, "tiny", TenantPolicy(rate_per_s=0.5, burst=2))
    # The JWT server's platform key: acts for acme and globex, never for initech.
    from query_service.keys import add_key as add_platform_key

    keys["platform"] = add_platform_key(data / DEFAULT_KEYS_FILE, "platform",
                                        tenants=["acme", "globex"])[1]
    # A read-only key and a key bound to maya, both acme's.
    keys["acme-read"] = add_platform_key(data / DEFAULT_KEYS_FILE, "acme", scopes=["read"])[1]
    keys["acme-maya"] = add_platform_key(data / DEFAULT_KEYS_FILE, "acme", user="maya")[1]
    idp = Idp()
    serve = ServeProcess(data, QUICK_JOIN)  # SERVING sooner (see serve_proc.QUICK_JOIN)
    base = {"MEMSTRATA_DATA_DIR": str(data), "MEMSTRATA_API_ADDRESS": serve.address}
    servers = {
        # Deletes refused (the default); the service's address from MEMSTRATA_API_ADDRESS.
        "main": McpProcess(base, tmp / "mcp-main.log").start(),
        "deletes": McpProcess({**base, "MEMSTRATA_MCP_ALLOW_DELETE": "true"},
                              tmp / "mcp-deletes.log").start(),
        # Bearer JWTs beside keys; deletes allowed, so only a token's scopes stop them.
        "jwt": McpProcess({**base, "MEMSTRATA_MCP_ALLOW_DELETE": "true",
                           "MEMSTRATA_API_KEY": keys["platform"],
                           "MEMSTRATA_MCP_JWT_JWKS_FILE": str(idp.write_jwks(tmp / "jwks.json")),
                           "MEMSTRATA_MCP_JWT_ISSUER": ISSUER,
                           "MEMSTRATA_MCP_JWT_AUDIENCE": AUDIENCE}, tmp / "mcp-jwt.log").start(),
    }
    stack = Stack(data, serve, keys, servers, idp)
    try:
        serve.wait_serving()
        # Bound to one user; no MEMSTRATA_API_ADDRESS: it finds serve through serve.json.
        servers["bound"] = McpProcess({"MEMSTRATA_DATA_DIR": str(data),
                                       "MEMSTRATA_MCP_USER": "maya"},
                                      tmp / "mcp-bound.log").start()
        from memstrata.client import MemoryClient

        for tenant in ("acme", "globex"):
            with MemoryClient(serve.address, api_key=keys[tenant]) as client:
                assert client.ingest(sample_events(tenant)).accepted > 0
        wait_searchable(serve.address, keys["acme"], "acme", "maya", "cat Sardinha",
                        "2024-05-20-after-trip")
        wait_searchable(serve.address, keys["globex"], "globex", "maya", "bees hives",
                        "2024-02-01-notes")
        for server in servers.values():
            server.wait_up()
    except BaseException:
        stop(stack)
        raise
    return stack


def stop(stack: Stack) -> None:
    for server in stack.servers.values():
        server.stop()
    stack.serve.stop()


@dataclass
class Statuses:
    """Every HTTP status the client received, in order."""

    seen: list[int] = field(default_factory=list)


@asynccontextmanager
async def session(url: str, key: str | None, *, statuses: Statuses | None = None,
                  headers: dict[str, str] | None = None, mode: str = "auto"
                  ) -> AsyncIterator[Any]:
    """The SDK's client over streamable HTTP with ``Authorization: Bearer <key>``.

    ``mode``: ``auto`` speaks the newest protocol revision (stateless by design),
    ``legacy`` the initialize handshake of the 2025 revisions.
    """
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    statuses = statuses if statuses is not None else Statuses()

    async def record(response: Any) -> None:
        statuses.seen.append(response.status_code)

    sent = dict(headers or {})
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    async with httpx2.AsyncClient(headers=sent, timeout=60,
                                  event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(url, http_client=http),
                          mode=mode) as client:
            yield client
