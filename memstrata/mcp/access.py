"""Who is calling: API keys verified against the service, and the scope of a call.

The bearer token of an HTTP request is a memstrata API key (or, when JWTs are
on, a JWT: :mod:`memstrata.mcp.jwt_auth`). :class:`KeyVerifier` is the SDK's
token-verifier seam: it asks the service what the key may do (a
``DescribeKey`` call made with that key: tenant, bound user, scopes) and keeps
the answer for ``MEMSTRATA_MCP_AUTH_CACHE_S``. Every tool call then goes to the
service with the same key, so the service checks it again and applies that
tenant's limits, fair share and budget; a key the service refuses is dropped
from the cache at once. The tenant is always the key's, never an argument; the
user is the key's bound user, else the fixed binding (``MEMSTRATA_MCP_USER``),
else the ``user`` argument within that tenant. A tool whose scope the key lacks
is refused before any call (and the service would refuse it too).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from memstrata.client.aio import AsyncMemoryClient
from memstrata.client.errors import RateLimited, RemoteError, Unauthenticated
from memstrata.client.settings import ClientSettings
from memstrata.mcp.settings import McpSettings
from memstrata.model import Scope

__all__ = ["CannotVerify", "Caller", "ClientPool", "KeyGrant", "KeyVerifier", "ToolRefused",
           "scope_for"]

log = logging.getLogger(__name__)

#: Longer tokens are refused unread (a memstrata key is about 60 characters).
MAX_TOKEN_CHARS = 512
_KEY_ID = re.compile(r"^msk_([A-Za-z0-9]+)_")


class ToolRefused(Exception):
    """A tool call refused before it reached the service; the message says why."""


class CannotVerify(Exception):
    """The service could not say whether a key is good: answered ``status`` (429 or 503),
    not 401, so a client does not drop a good key."""

    def __init__(self, status: int, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_id(key: str) -> str:
    """The public id part of ``msk_<id>_<secret>`` (never the secret), for logs."""
    m = _KEY_ID.match(key)
    return m.group(1) if m else "unknown"


@dataclass(frozen=True)
class Caller:
    """Who is calling: the client that reaches the service, and the credential's grant.

    An API key caller: ``key`` is that key, the service checks its scopes and user.
    A JWT caller: ``key`` is the server's platform key (``MEMSTRATA_API_KEY``), so the
    token's ``user`` binding and ``scopes`` are enforced here, before any call.
    """

    client: AsyncMemoryClient
    tenant: str
    key: str
    #: Set: the credential acts for this user only.
    user: str | None = None
    #: What the credential may do (checked here first, and by the service for keys);
    #: None: not known here, the service alone checks.
    scopes: frozenset[str] | None = None
    #: ``key``, ``jwt`` or ``stdio``, for logs and spans.
    via: str = "key"


class ClientPool:
    """One :class:`AsyncMemoryClient` per API key, the least recently used closed first.

    gRPC shares connections between channels to the same address, so a client
    per key costs little; the bound keeps a flood of made-up keys from holding
    memory. A client dropped from the pool is closed after its longest call.
    """

    def __init__(self, address: str, settings: ClientSettings, size: int) -> None:
        self.address = address
        self.settings = settings
        self.size = size
        self._clients: OrderedDict[str, AsyncMemoryClient] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()

    def get(self, key: str) -> AsyncMemoryClient:
        d = _digest(key)
        client = self._clients.get(d)
        if client is None:
            client = AsyncMemoryClient(self.address, api_key=key, settings=self.settings)
            self._clients[d] = client
            while len(self._clients) > self.size:
                _, old = self._clients.popitem(last=False)
                self._close_later(old)
        self._clients.move_to_end(d)
        return client

    def _close_later(self, client: AsyncMemoryClient) -> None:
        async def close() -> None:
            await asyncio.sleep(client.timeout_s + 1)
            await client.close()

        task = asyncio.get_running_loop().create_task(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        for task in list(self._closing):
            task.cancel()
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


@dataclass(frozen=True)
class KeyGrant:
    """What the service says a key may do: its tenant, bound user and scopes."""

    tenant: str
    user: str | None = None
    #: None: the service did not say (every call is still checked there).
    scopes: frozenset[str] | None = None


@dataclass
class _Verdict:
    grant: KeyGrant | None
    until: float


class KeyVerifier:
    """The SDK's ``TokenVerifier`` over memstrata API keys (see the module's text)."""

    def __init__(self, pool: ClientPool, ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self.ttl_s = ttl_s
        self.clock = clock
        self._verdicts: OrderedDict[str, _Verdict] = OrderedDict()
        #: A key's grant is kept past the verdict's expiry (bounded), for when the
        #: service is limiting the key and cannot answer again.
        self._grants: OrderedDict[str, KeyGrant] = OrderedDict()

    async def verify_token(self, token: str):  # -> AccessToken | None (SDK type: lazy import)
        from mcp.server.auth.provider import AccessToken

        grant = await self.grant_of(token)
        if grant is None:
            return None
        return AccessToken(token=token, client_id=f"memstrata-key:{key_id(token)}",
                           scopes=sorted(grant.scopes or ()),
                           claims={"tenant": grant.tenant, "user": grant.user, "via": "key",
                                   "scoped": grant.scopes is not None})

    async def tenant_of(self, key: str) -> str | None:
        """The key's tenant, or None when the service refuses the key (see :meth:`grant_of`)."""
        grant = await self.grant_of(key)
        return grant.tenant if grant is not None else None

    async def grant_of(self, key: str) -> KeyGrant | None:
        """The key's grant, or None when the service refuses the key.

        Raises :class:`CannotVerify` when the service cannot answer (unreachable, or
        limiting a key not seen before): neither a yes nor a no, and not cached.
        """
        if not key or len(key) > MAX_TOKEN_CHARS or not key.isprintable():
            return None
        d = _digest(key)
        now = self.clock()
        verdict = self._verdicts.get(d)
        if verdict is not None and verdict.until > now:
            return verdict.grant
        grant: KeyGrant | None
        try:
            info = await self.pool.get(key).describe_key()
            scopes = getattr(info, "scopes", None)
            grant = KeyGrant(info.tenant_id, getattr(info, "user_id", None) or None,
                             frozenset(scopes) if scopes else None) if info.tenant_id else None
        except Unauthenticated:
            grant = None
        except RateLimited as exc:
            # Authenticated first, then limited: a key seen before keeps its grant.
            grant = self._grants.get(d)
            if grant is None:
                raise CannotVerify(429, f"limited: {exc.details}",
                                   exc.retry_after_s or 1.0) from None
        except RemoteError as exc:
            log.warning("key %s: the service could not verify it (%s)", key_id(key), exc.code)
            raise CannotVerify(503, f"the memstrata service could not check the key "
                                    f"({exc.code.name}); retry later") from None
        self._remember(d, _Verdict(grant, now + self.ttl_s), grant)
        if grant is None:
            log.info("refused API key %s: unknown or revoked", key_id(key))
        return grant

    def _remember(self, d: str, verdict: _Verdict, grant: KeyGrant | None) -> None:
        size = self.pool.size
        self._verdicts[d] = verdict
        self._verdicts.move_to_end(d)
        while len(self._verdicts) > size:
            self._verdicts.popitem(last=False)
        if grant is not None:
            self._grants[d] = grant
            self._grants.move_to_end(d)
            while len(self._grants) > size:
                self._grants.popitem(last=False)

    def forget(self, key: str) -> None:
        """The service refused this key during a call: ask again on its next request."""
        self._verdicts.pop(_digest(key), None)


def scope_for(settings: McpSettings, tenant: str, user: str | None, *,
              token_user: str | None = None, credential: str = "token") -> Scope:
    """The scope of one tool call: the credential's tenant and the bound or named user.

    ``token_user``: the user the credential (a JWT, or a bound API key) is bound to; it
    must agree with the server's binding. ``credential`` names it in refusals.
    """
    bound = settings.user
    if token_user is not None:
        if bound is not None and bound != token_user:
            raise ToolRefused(f"user: this {credential} is bound to user {token_user!r} but "
                              f"this server acts for {bound!r} only (MEMSTRATA_MCP_USER)")
        if user is not None and user != token_user:
            raise ToolRefused(f"user: this {credential} is bound to user {token_user!r}; "
                              "leave `user` out")
        user = token_user
    elif bound is not None:
        if user is not None and user != bound:
            raise ToolRefused("user: this server acts for one user only (MEMSTRATA_MCP_USER); "
                              "leave `user` out")
        user = bound
    if user is None:
        raise ToolRefused("user: required: the id of the user whose memory to use")
    try:
        return Scope(tenant_id=tenant, user_id=user)
    except ValidationError:
        raise ToolRefused("user: 1 to 128 letters, digits or . _ : @ / + - characters") from None
