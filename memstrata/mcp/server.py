"""The MCP server: the memory tools on the official SDK's ``MCPServer``.

Streamable HTTP runs stateless (every request stands alone, so replicas behind
a load balancer need no sticky sessions) at the SDK's ``/mcp`` path, behind
the SDK's bearer-token seam (:class:`~memstrata.mcp.access.KeyVerifier`) and
its DNS-rebinding checks (Host and Origin must be loopback or allowed by
``MEMSTRATA_MCP_ALLOWED_HOSTS`` / ``_ORIGINS``). ``GET /healthz`` answers 200
without a key, for probes. Over stdio the client that starts the server owns
it: the key is ``MEMSTRATA_API_KEY``, checked once at start.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memstrata import __version__
from memstrata.client.settings import ClientSettings
from memstrata.mcp.access import CannotVerify, Caller, ClientPool, KeyVerifier, ToolRefused
from memstrata.mcp.jwt_auth import BearerVerifier, JwtVerifier, TokenRefused
from memstrata.mcp.settings import McpSettings
from memstrata.mcp.tools import MemoryTools
from memstrata.mcp.tracing import TraceHeaders, replace_sdk_spans

__all__ = ["MCP_PATH", "Served", "build", "http_app", "stdio_caller"]

log = logging.getLogger(__name__)

#: The SDK's default endpoint path.
MCP_PATH = "/mcp"

INSTRUCTIONS = (
    "Long-term memory of past conversations, kept in four layers from coarse to fine: "
    "L0 per-turn summaries, L1 key facts, L2 per-turn notes, L3 the raw turns. Start with "
    "search_memory or ask; read finer layers with read_session only when needed. "
    "add_turns remembers new messages.")

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                        open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)
_DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                          open_world_hint=False)


class Served:
    """A built server and what it holds open (the service clients)."""

    def __init__(self, server: MCPServer[Any], tools: MemoryTools, pool: ClientPool) -> None:
        self.server = server
        self.tools = tools
        self.pool = pool


def _refusals_as_tool_errors(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """A refusal becomes the SDK's ToolError: the model reads its message (any other
    exception is a crash, shown only as "Error executing tool")."""

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except ToolRefused as exc:
            raise ToolError(str(exc)) from None

    return run


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def _http_caller(pool: ClientPool, service_key: str | None) -> Caller:
    token = get_access_token()
    claims = (token.claims or {}) if token is not None else {}
    tenant = claims.get("tenant")
    if token is None or not tenant:
        raise ToolRefused("no API key: send Authorization: Bearer <memstrata API key>")
    if claims.get("via") == "jwt":
        if service_key is None:  # build() refuses this set-up; kept as a guard
            raise ToolRefused("this server has no platform key for JWT callers")
        user = claims.get("user")
        return Caller(client=pool.get(service_key), tenant=str(tenant), key=service_key,
                      user=str(user) if user else None, scopes=frozenset(token.scopes),
                      via="jwt")
    user = claims.get("user")
    return Caller(client=pool.get(token.token), tenant=str(tenant), key=token.token,
                  user=str(user) if user else None,
                  scopes=frozenset(token.scopes) if claims.get("scoped") else None)


def build(settings: McpSettings, address: str, client_settings: ClientSettings, *,
          caller: Caller | None = None) -> Served:
    """The server with its tools: ``caller`` fixed (stdio) or taken from each request's key.

    With JWTs on (HTTP only), a token's calls reach the service with ``MEMSTRATA_API_KEY``,
    a platform key that may act for the tokens' tenants; ValueError when it is not set.
    """
    pool = ClientPool(address, client_settings, settings.max_clients)
    verifier = KeyVerifier(pool, settings.auth_cache_s)
    http = caller is None
    jwts: JwtVerifier | None = None
    service_key: str | None = None
    if http and settings.jwt_enabled:
        if client_settings.key is None:
            raise ValueError("MEMSTRATA_API_KEY: required when JWT bearer tokens are on: "
                             "token callers reach the service with it, so it must be a "
                             "platform key whose tenants include every tenant a token names "
                             "(memstrata keys add PLATFORM --tenants acme,globex)")
        service_key = client_settings.key.get_secret_value()
        jwts = JwtVerifier(settings)

    async def who() -> Caller:
        return caller if caller is not None else await _http_caller(pool, service_key)

    tools = MemoryTools(settings, verifier, who)
    server: MCPServer[Any] = MCPServer(
        name="memstrata", title="memstrata memory", version=__version__,
        instructions=INSTRUCTIONS,
        token_verifier=BearerVerifier(verifier, jwts) if http else None,
        # No OAuth server: the issuer is never published (no resource_server_url, no
        # provider), but the SDK needs one to turn its bearer-token checks on.
        auth=AuthSettings.model_validate({
            "issuer_url": f"http://{_url_host(settings.host)}:{settings.port}",
            "resource_server_url": None}) if http else None,
        log_level="WARNING")
    replace_sdk_spans(server.middleware)  # spans to memstrata's provider, _meta context
    for fn, note in ((tools.search_memory, _READ), (tools.ask, _READ),
                     (tools.read_session, _READ), (tools.list_sessions, _READ),
                     (tools.get_profile, _READ), (tools.list_entities, _READ),
                     (tools.add_turns, _WRITE), (tools.delete_session, _DELETE),
                     (tools.delete_user, _DELETE)):
        server.add_tool(_refusals_as_tool_errors(fn), name=fn.__name__, annotations=note,
                        description=inspect.cleandoc(fn.__doc__ or ""))

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Served(server, tools, pool)


class _CannotVerifyAs503:
    """ASGI middleware outside the SDK's bearer check: a key the service could not check
    gets 503 (or 429) with Retry-After, never 401; a JWT that fails a check gets 401
    naming the check."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        except TokenRefused as exc:
            log.info("refused a bearer JWT: %s", exc)
            description = f"JWT refused: {exc}"
            # Header-safe: printable ASCII without quotes (a kid is the caller's text).
            quoted = "".join(c for c in description[:200]
                             if " " <= c <= "~" and c not in '"\\')
            response = JSONResponse(
                {"error": "invalid_token", "error_description": description},
                status_code=401,
                headers={"WWW-Authenticate": f'Bearer error="invalid_token", '
                                             f'error_description="{quoted}"'})
            await response(scope, receive, send)
        except CannotVerify as exc:
            response = JSONResponse(
                {"error": "temporarily_unavailable", "error_description": str(exc)},
                status_code=exc.status,
                headers={"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))})
            await response(scope, receive, send)


def http_app(served: Served, settings: McpSettings) -> Starlette:
    """The ASGI app of the streamable HTTP transport (stateless, checks on)."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=settings.hosts(),
                                         allowed_origins=settings.origins())
    app = served.server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True,
        json_response=settings.json_response, transport_security=security,
        host=settings.host)
    app.add_middleware(_CannotVerifyAs503)  # around the SDK's auth middleware
    app.add_middleware(TraceHeaders)  # outermost: the caller's trace context for the request
    return app


async def stdio_caller(address: str, client_settings: ClientSettings) -> Caller:
    """The caller of a stdio server: ``MEMSTRATA_API_KEY``, its tenant asked once."""
    from memstrata.client.aio import AsyncMemoryClient

    if client_settings.key is None:
        raise ToolRefused("MEMSTRATA_API_KEY is not set: the stdio server calls the service "
                          "with it (`memstrata keys add TENANT` makes one)")
    key = client_settings.key.get_secret_value()
    client = AsyncMemoryClient(address, api_key=key, settings=client_settings)
    return Caller(client=client, tenant=await client.key_tenant(), key=key, via="stdio")
