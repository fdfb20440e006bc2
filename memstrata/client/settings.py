"""Client settings: ``MEMSTRATA_API_KEY`` and where the service is."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ClientSettings(BaseSettings):
    """What a client needs to reach the query service."""

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_", extra="ignore",
                                      case_sensitive=False)

    #: The key ``memstrata keys add TENANT`` printed.
    api_key: SecretStr | None = None
    #: ``HOST:PORT`` of the service (``--remote`` on the command line wins).
    remote: str | None = None
    #: PEM root certificate to verify a TLS server with; unset: plaintext.
    remote_ca_file: Path | None = None
    #: Default deadline of a call, in seconds.
    remote_timeout_s: float = Field(30.0, gt=0, le=3600)
