"""MCP server settings, ``MEMSTRATA_MCP_*`` (``memstrata mcp``).

Registered with the core's settings namespaces (``memstrata.settings`` entry
point), so the variables pass ``load_config``'s check for stray names. This
module imports nothing but pydantic: every start-up of every command loads it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memstrata.model import Identifier

__all__ = ["ENV_PREFIX", "LOOPBACK_HOSTS", "LOOPBACK_ORIGINS", "McpSettings"]

ENV_PREFIX = "MEMSTRATA_MCP_"
#: Host and Origin headers always accepted: a client on the same machine.
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

Names = Annotated[list[str], NoDecode]


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

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
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

    def hosts(self) -> list[str]:
        return [*LOOPBACK_HOSTS, *self.allowed_hosts]

    def origins(self) -> list[str]:
        return [*LOOPBACK_ORIGINS, *self.allowed_origins]
