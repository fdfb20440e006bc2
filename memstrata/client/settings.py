"""Client settings, ``MEMSTRATA_API_*``: the key and where the service is.

Registered with core's settings namespaces (``memstrata.settings`` entry point),
so ``MEMSTRATA_API_KEY`` and friends pass ``load_settings``'s check for stray
variables. This module imports nothing but pydantic (every start-up loads it).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ClientSettings(BaseSettings):
    """What a client needs to reach the query service."""

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_API_", extra="forbid",
                                      case_sensitive=False)

    #: ``MEMSTRATA_API_KEY``: the key ``memstrata keys add TENANT`` printed.
    key: SecretStr | None = None
    #: ``HOST:PORT`` of the service (``--remote`` on the command line wins).
    address: str | None = None
    #: PEM root certificate to verify a TLS server with; unset: plaintext.
    ca_file: Path | None = None
    #: Default deadline of a call, in seconds.
    timeout_s: float = Field(30.0, gt=0, le=3600)


def from_environment() -> ClientSettings:
    """``MEMSTRATA_API_*`` from the environment (and ``MEMSTRATA_CONFIG_FILE``'s ``[api]``).

    What a client built without ``settings`` uses, as the README shows: the key in
    ``MEMSTRATA_API_KEY``. Read through the settings loader, so a bad value is an
    error naming the variable.
    """
    from memstrata.config import load_namespace

    return load_namespace(ClientSettings)
