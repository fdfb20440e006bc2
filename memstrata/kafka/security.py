"""How memstrata's Kafka clients authenticate: TLS and SASL (``MEMSTRATA_KAFKA_*``).

One place builds the keyword arguments every aiokafka client (the stream
worker's consumers and admin, the query service's producer, ``memstrata
produce``) and the Faust app take, so a production cluster with TLS and
SASL/PLAIN or SASL/SCRAM needs settings only, never code (the clients
themselves are built in :mod:`memstrata.kafka.clients`). The fields are part
of :class:`memstrata.kafka.settings.KafkaSettings`, which the entry point loads
once and passes down: nothing here reads the environment.

aiokafka reports a failed bootstrap as "Unable to bootstrap" and logs the
cause; :func:`start_checked` turns that into an error that names the setting
to fix (an untrusted certificate, a refused password).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from memstrata.kafka.settings import KafkaSettings

__all__ = ["KafkaSecurityError", "diagnose", "faust_credentials", "kafka_client_kwargs",
           "ssl_context", "start_checked"]

P = "MEMSTRATA_KAFKA_"


class KafkaSecurityError(ConnectionError):
    """The broker refused our TLS or SASL settings; the message names the setting."""


def ssl_context(settings: KafkaSettings) -> ssl.SSLContext | None:
    """The TLS context for the brokers, or None without TLS."""
    s = settings
    if not s.tls:
        return None
    try:
        ctx = ssl.create_default_context(cafile=str(s.ssl_cafile) if s.ssl_cafile else None)
    except (OSError, ssl.SSLError) as exc:
        raise KafkaSecurityError(f"{P}SSL_CAFILE ({s.ssl_cafile}): not a readable PEM "
                                 f"CA bundle: {exc}") from exc
    ctx.check_hostname = s.ssl_check_hostname
    if s.ssl_certfile is not None:
        password = s.ssl_keyfile_password.get_secret_value() if s.ssl_keyfile_password else None
        try:
            ctx.load_cert_chain(str(s.ssl_certfile), str(s.ssl_keyfile), password)
        except (OSError, ssl.SSLError) as exc:
            raise KafkaSecurityError(
                f"{P}SSL_CERTFILE/{P}SSL_KEYFILE ({s.ssl_certfile}, {s.ssl_keyfile}): "
                f"cannot load the client certificate: {exc}") from exc
    return ctx


def kafka_client_kwargs(settings: KafkaSettings) -> dict[str, Any]:
    """aiokafka keyword arguments (security protocol, TLS context, SASL) from ``settings``.

    Every aiokafka client takes them (producer, consumer, admin, ``create_conn``).
    """
    s = settings
    kwargs: dict[str, Any] = {"security_protocol": s.security_protocol}
    ctx = ssl_context(s)
    if ctx is not None:
        kwargs["ssl_context"] = ctx
    if s.security_protocol.startswith("SASL_"):
        kwargs["sasl_mechanism"] = s.sasl_mechanism
        kwargs["sasl_plain_username"] = s.sasl_username
        kwargs["sasl_plain_password"] = (s.sasl_password.get_secret_value()
                                         if s.sasl_password else None)
    return kwargs


def faust_credentials(settings: KafkaSettings) -> Any:
    """``broker_credentials`` for ``faust.App`` (None for PLAINTEXT)."""
    s = settings
    if s.security_protocol == "PLAINTEXT":
        return None
    import faust

    if s.security_protocol == "SSL":
        return faust.SSLCredentials(ssl_context(s))
    return faust.SASLCredentials(
        username=s.sasl_username,
        password=s.sasl_password.get_secret_value() if s.sasl_password else None,
        ssl_context=ssl_context(s), mechanism=s.sasl_mechanism)


async def start_checked(client: Any, brokers: str, settings: KafkaSettings) -> None:
    """``await client.start()``; on failure, say which TLS/SASL setting the broker refused."""
    try:
        await client.start()
    except Exception as exc:
        await _release(client)
        why = await diagnose(brokers, settings)
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


async def diagnose(brokers: str, settings: KafkaSettings) -> str | None:
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
                asyncio.open_connection(host, int(port), ssl=ssl_context(s),
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
            create_conn(host, int(port), **kafka_client_kwargs(s)), s.diagnose_timeout_s)
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
