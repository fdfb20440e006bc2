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
    #: PEM client certificate, for a service that requires mutual TLS
    #: (``MEMSTRATA_SERVICE_TLS_CLIENT_CA``); used only with ``ca_file``.
    tls_cert_file: Path | None = None
    #: PEM key of that client certificate.
    tls_key_file: Path | None = None
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


def tls_credentials(settings: ClientSettings) -> tuple[bytes, bytes | None, bytes | None]:
    """Root CA, client key and certificate (PEM) for ``grpc.ssl_channel_credentials``.

    ValueError naming the setting when only one of the client pair is set.
    """
    if (settings.tls_cert_file is None) != (settings.tls_key_file is None):
        raise ValueError("MEMSTRATA_API_TLS_CERT_FILE and MEMSTRATA_API_TLS_KEY_FILE go together")
    if settings.ca_file is None:
        raise ValueError("MEMSTRATA_API_CA_FILE is required for TLS")
    key = settings.tls_key_file.read_bytes() if settings.tls_key_file else None
    cert = settings.tls_cert_file.read_bytes() if settings.tls_cert_file else None
    return settings.ca_file.read_bytes(), key, cert
