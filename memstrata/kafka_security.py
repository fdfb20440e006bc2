"""How memstrata's Kafka clients authenticate: TLS and SASL (``MEMSTRATA_KAFKA_*``).

One place builds the keyword arguments every aiokafka client (the stream
worker's consumers and admin, the query service's producer, ``memstrata
produce``) and the Faust app take, so a production cluster with TLS and
SASL/PLAIN or SASL/SCRAM needs settings only, never code. The fields are
inherited by ``streams.settings.KafkaSettings``, which owns the namespace;
this module lives in the core so that every service can use it without
importing another service.

aiokafka reports a failed bootstrap as "Unable to bootstrap" and logs the
cause; :func:`start_checked` turns that into an error that names the setting
to fix (an untrusted certificate, a refused password).
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["KafkaSecurityError", "KafkaSecuritySettings", "faust_credentials",
           "kafka_client_kwargs", "start_checked"]

P = "MEMSTRATA_KAFKA_"


class KafkaSecurityError(ConnectionError):
    """The broker refused our TLS or SASL settings; the message names the setting."""


class KafkaSecuritySettings(BaseSettings):
    """TLS and SASL of every Kafka client; PLAINTEXT (no TLS, no SASL) by default."""

    model_config = SettingsConfigDict(env_prefix=P, extra="ignore", validate_default=True)

    #: ``SSL`` and ``SASL_SSL`` encrypt; ``SASL_*`` authenticate with a user and password.
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    #: CA bundle (PEM) that signs the brokers' certificates; unset: the system's CAs.
    ssl_cafile: Path | None = None
    #: Client certificate and key (PEM) for brokers that require mutual TLS.
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_keyfile_password: SecretStr | None = None
    #: Check that the broker's certificate names the host we connect to.
    ssl_check_hostname: bool = True
    #: Seconds :func:`start_checked` waits for a broker when it diagnoses a failed start.
    diagnose_timeout_s: float = Field(10.0, gt=0, le=120)

    @model_validator(mode="after")
    def _check_security(self) -> "KafkaSecuritySettings":
        sasl = self.security_protocol.startswith("SASL_")
        if sasl and not (self.sasl_username and self.sasl_password):
            raise ValueError(f"{P}SASL_USERNAME and {P}SASL_PASSWORD are required when "
                             f"{P}SECURITY_PROTOCOL={self.security_protocol}")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError(f"{P}SSL_CERTFILE and {P}SSL_KEYFILE go together")
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ValueError(f"{P}{name.upper()}: no such file: {path}")
        return self

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for the brokers, or None without TLS."""
        if not self.tls:
            return None
        try:
            ctx = ssl.create_default_context(
                cafile=str(self.ssl_cafile) if self.ssl_cafile else None)
        except (OSError, ssl.SSLError) as exc:
            raise KafkaSecurityError(f"{P}SSL_CAFILE ({self.ssl_cafile}): not a readable PEM "
                                     f"CA bundle: {exc}") from exc
        ctx.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile is not None:
            password = (self.ssl_keyfile_password.get_secret_value()
                        if self.ssl_keyfile_password else None)
            try:
                ctx.load_cert_chain(str(self.ssl_certfile), str(self.ssl_keyfile), password)
            except (OSError, ssl.SSLError) as exc:
                raise KafkaSecurityError(
                    f"{P}SSL_CERTFILE/{P}SSL_KEYFILE ({self.ssl_certfile}, {self.ssl_keyfile}): "
                    f"cannot load the client certificate: {exc}") from exc
        return ctx

    def aiokafka_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``AIOKafkaProducer``/``Consumer``/``AdminClient``."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        ctx = self.ssl_context()
        if ctx is not None:
            kwargs["ssl_context"] = ctx
        if self.security_protocol.startswith("SASL_"):
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = (self.sasl_password.get_secret_value()
                                             if self.sasl_password else None)
        return kwargs


def kafka_client_kwargs(settings: KafkaSecuritySettings | None = None) -> dict[str, Any]:
    """aiokafka keyword arguments from ``settings`` (default: the environment)."""
    return (settings or KafkaSecuritySettings()).aiokafka_kwargs()


def faust_credentials(settings: KafkaSecuritySettings | None = None) -> Any:
    """``broker_credentials`` for ``faust.App`` (None for PLAINTEXT)."""
    s = settings or KafkaSecuritySettings()
    if s.security_protocol == "PLAINTEXT":
        return None
    import faust

    if s.security_protocol == "SSL":
        return faust.SSLCredentials(s.ssl_context())
    return faust.SASLCredentials(
        username=s.sasl_username,
        password=s.sasl_password.get_secret_value() if s.sasl_password else None,
        ssl_context=s.ssl_context(), mechanism=s.sasl_mechanism)


async def start_checked(client: Any, brokers: str,
                        settings: KafkaSecuritySettings | None = None) -> None:
    """``await client.start()``; on failure, say which TLS/SASL setting the broker refused."""
    try:
        await client.start()
    except Exception as exc:
        await _release(client)
        s = settings or KafkaSecuritySettings()
        why = await diagnose(brokers, s)
        if why is None:
            raise
        raise KafkaSecurityError(why) from exc


async def _release(client: Any) -> None:
    """Close a client whose start failed (producers and consumers stop, admins close)."""
    for name in ("stop", "close"):
        method = getattr(client, name, None)
        if method is not None:
            try:
                await method()
            except Exception:  # noqa: BLE001 - best effort on a client that never started
                pass
            return


async def diagnose(brokers: str, settings: KafkaSecuritySettings) -> str | None:
    """Connect to the first broker the way the clients do and name what it refused."""
    from aiokafka.conn import create_conn
    from aiokafka.errors import KafkaError

    first = next((b.strip() for b in brokers.split(",") if b.strip()), "")
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        return f"{P}BROKERS: {first!r} is not host:port"
    s = settings
    if s.tls:
        try:
            _r, writer = await asyncio.wait_for(
                asyncio.open_connection(host, int(port), ssl=s.ssl_context(),
                                        server_hostname=host if s.ssl_check_hostname else None),
                s.diagnose_timeout_s)
            writer.close()
        except ssl.SSLCertVerificationError as exc:
            trust = f"{P}SSL_CAFILE ({s.ssl_cafile})" if s.ssl_cafile else \
                "the system CAs (set MEMSTRATA_KAFKA_SSL_CAFILE)"
            return (f"TLS to Kafka broker {first} failed: its certificate is not trusted by "
                    f"{trust}: {exc.verify_message}")
        except ssl.SSLError as exc:
            return (f"TLS to Kafka broker {first} failed ({P}SECURITY_PROTOCOL="
                    f"{s.security_protocol}, {P}SSL_*): {exc}")
        except (OSError, asyncio.TimeoutError):
            return None  # unreachable: nothing to say about security
    if not s.security_protocol.startswith("SASL_"):
        return None
    try:
        conn = await asyncio.wait_for(
            create_conn(host, int(port), **s.aiokafka_kwargs()), s.diagnose_timeout_s)
        conn.close()
    except KafkaError as exc:
        text = f"{type(exc).__name__}: {exc}"
        if "Sasl" in type(exc).__name__ or "auth" in text.lower():
            return (f"Kafka broker {first} refused SASL {s.sasl_mechanism} login of "
                    f"{P}SASL_USERNAME={s.sasl_username!r} (check {P}SASL_PASSWORD and "
                    f"{P}SASL_MECHANISM): {text}")
        return None
    except (OSError, asyncio.TimeoutError):
        return None
    return None
