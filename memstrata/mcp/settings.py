"""MCP server settings, ``MEMSTRATA_MCP_*`` (``memstrata mcp``).

Registered with the core's settings namespaces (``memstrata.settings`` entry
point), so the variables pass ``load_config``'s check for stray names. This
module imports nothing but pydantic: every start-up of every command loads it.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memstrata.model import Identifier

__all__ = ["ENV_PREFIX", "JWT_ALGORITHMS", "LOOPBACK_HOSTS", "LOOPBACK_ORIGINS", "McpSettings"]

ENV_PREFIX = "MEMSTRATA_MCP_"
#: Host and Origin headers always accepted: a client on the same machine.
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

Names = Annotated[list[str], NoDecode]
#: Signature algorithms a JWT may use: public-key ones only. ``none`` and the HMAC family
#: are never accepted (a JWKS holds public keys; HMAC over one is the classic forgery).
JWT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                  "ES256", "ES384", "ES512", "EdDSA")
_LOOPBACK_NAMES = ("localhost",)


def _loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class McpSettings(BaseSettings):
    """How ``memstrata mcp`` serves memory to MCP clients and whom it lets do what."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      case_sensitive=False, validate_default=True)

    #: ``stdio`` (a client starts the server) or ``streamable-http`` (a long-running server).
    transport: Literal["stdio", "streamable-http"] = "stdio"
    #: Address the HTTP transport listens on (loopback unless told otherwise).
    host: str = "127.0.0.1"
    #: Port of the HTTP transport; the endpoint is ``/mcp``.
    port: int = Field(8000, ge=1, le=65535)
    #: Fixed binding: every tool acts for this user only, and a ``user`` argument naming
    #: anyone else is refused. Unset: tools take the user as an argument, within the key's
    #: tenant (every key is tenant-wide today).
    user: Identifier | None = None
    #: Let the destructive tools (delete a session, delete a user) run.
    allow_delete: bool = False
    #: More ``Host`` header values to accept, comma-separated (``mcp.example.com``, or
    #: ``name:*`` for any port); loopback is always accepted. Other hosts get 421.
    allowed_hosts: Names = Field(default_factory=list)
    #: More ``Origin`` header values to accept, comma-separated; others get 403.
    allowed_origins: Names = Field(default_factory=list)
    #: Seconds a verified API key is trusted before the service is asked again (0: every
    #: request). The service still checks the key on every tool call, so a revoked key
    #: fails its next call at once and then the next request with 401.
    auth_cache_s: float = Field(30.0, ge=0, le=3600)
    #: Most API keys whose verification and connection are kept at once.
    max_clients: int = Field(1024, ge=1, le=100_000)
    #: Answer each HTTP request with one JSON body instead of an SSE stream.
    json_response: bool = True

    # -- optional JWT bearer tokens (a platform's identity provider) --------------------
    #: JSON Web Key Set file holding the identity provider's public keys (re-read when it
    #: changes). Setting it (or ``jwt_jwks_url``) turns JWT bearer tokens on, beside API keys.
    jwt_jwks_file: Path | None = None
    #: JWKS URL instead of a file: ``https://``, or ``http://`` on loopback only.
    jwt_jwks_url: str | None = None
    #: Seconds the keys fetched from ``jwt_jwks_url`` are kept (an unknown ``kid`` refetches).
    jwt_jwks_refresh_s: float = Field(300.0, ge=1, le=86_400)
    #: The ``iss`` a token must carry (required when JWTs are on).
    jwt_issuer: str | None = None
    #: The ``aud`` a token must carry (required when JWTs are on).
    jwt_audience: str | None = None
    #: Signature algorithms accepted, comma-separated (public-key ones only).
    jwt_algorithms: Names = Field(default_factory=lambda: ["RS256", "ES256"])
    #: Seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``.
    jwt_leeway_s: float = Field(30.0, ge=0, le=300)
    #: Claim naming the tenant: the scope of every call made with the token.
    jwt_tenant_claim: str = Field("tenant", min_length=1)
    #: Claim naming the user the token acts for (it binds the token to that user).
    jwt_user_claim: str = Field("user", min_length=1)
    #: A token without the user claim is refused. False: such a token may act for any user
    #: of its tenant (the ``user`` argument), as a platform key does.
    jwt_user_required: bool = True
    #: Claim listing what the token may do: ``read``, ``write``, ``delete`` (a space-separated
    #: string, as OAuth's ``scope``, or a list). Other values are ignored.
    jwt_scopes_claim: str = Field("scope", min_length=1)

    @field_validator("allowed_hosts", "allowed_origins", "jwt_algorithms", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        """``a,b`` from a variable; a list from the TOML file."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("allowed_hosts", "allowed_origins")
    @classmethod
    def _plain(cls, value: list[str]) -> list[str]:
        for name in value:
            if any(c.isspace() for c in name) or "/" in name.removeprefix("http://").removeprefix(
                    "https://"):
                raise ValueError(f"{name!r}: a host[:port] (origins: scheme://host[:port]), "
                                 "no spaces or paths")
        return value

    @field_validator("jwt_algorithms")
    @classmethod
    def _public_key_algorithms(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one algorithm")
        for name in value:
            if name not in JWT_ALGORITHMS:
                raise ValueError(f"{name!r} is not accepted; choose among "
                                 f"{', '.join(JWT_ALGORITHMS)} (never none or HS*)")
        return value

    @field_validator("jwt_jwks_url")
    @classmethod
    def _jwks_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme == "https" and parts.hostname:
            return value
        if parts.scheme == "http" and parts.hostname and _loopback(parts.hostname):
            return value
        raise ValueError(f"{value!r}: an https:// URL, or http:// on loopback (127.0.0.1, "
                         "::1, localhost)")

    @model_validator(mode="after")
    def _jwt_complete(self) -> "McpSettings":
        if self.jwt_jwks_file is not None and self.jwt_jwks_url is not None:
            raise ValueError("jwt_jwks_file and jwt_jwks_url: set one, not both")
        if self.jwt_enabled:
            missing = [f"{ENV_PREFIX}{n.upper()}" for n in ("jwt_issuer", "jwt_audience")
                       if not getattr(self, n)]
            if missing:
                raise ValueError(f"{', '.join(missing)}: required when JWT bearer tokens are "
                                 "on (a JWKS is set): every token is checked against them")
        return self

    @property
    def jwt_enabled(self) -> bool:
        """True when a JWKS is configured: bearer JWTs are accepted beside API keys."""
        return self.jwt_jwks_file is not None or self.jwt_jwks_url is not None

    def hosts(self) -> list[str]:
        return [*LOOPBACK_HOSTS, *self.allowed_hosts]

    def origins(self) -> list[str]:
        return [*LOOPBACK_ORIGINS, *self.allowed_origins]
