"""Why a call failed at the TLS layer, in words naming the setting to change.

gRPC reports a plaintext client talking to a TLS service as ``UNAVAILABLE: Socket
closed``, which says nothing about TLS. After such a failure the command line asks
the address itself: one TCP connection and a TLS handshake (no data sent), then a
hint naming ``MEMSTRATA_API_CA_FILE`` when the two sides disagree. Standard library
only (``ssl``, ``socket``), like the rest of the light client.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

#: Words of gRPC's UNAVAILABLE details when the connection itself failed (not the service).
_TRANSPORT = ("socket closed", "failed to connect", "connection reset", "handshake",
              "ssl", "tls", "end of tls", "broken pipe", "connection refused")

CA_SETTING = "MEMSTRATA_API_CA_FILE"


def transport_failure(details: str) -> bool:
    """Whether an UNAVAILABLE's details describe the connection, not the service's answer."""
    text = details.lower()
    return any(t in text for t in _TRANSPORT)


def _split(address: str) -> tuple[str, int] | None:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        return host or "127.0.0.1", int(port)
    except ValueError:
        return None


def _handshake(host: str, port: int, context: ssl.SSLContext, timeout_s: float) -> None:
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        with context.wrap_socket(sock, server_hostname=host):
            pass


def tls_hint(address: str, ca_file: Path | None, timeout_s: float = 3.0) -> str | None:
    """A sentence naming the TLS setting to change for ``address``; None when TLS is not it.

    Nothing listening, or a handshake that agrees with the client's settings, gives None.
    """
    where = _split(address)
    if where is None:
        return None
    host, port = where
    anything = ssl.create_default_context()
    anything.check_hostname = False
    anything.verify_mode = ssl.CERT_NONE
    anything.set_alpn_protocols(["h2"])
    try:
        _handshake(host, port, anything, timeout_s)
        speaks_tls = True
    except ssl.SSLError:
        speaks_tls = False
    except OSError:
        return None  # nothing listens there (or it hung up): not a TLS question
    if speaks_tls and ca_file is None:
        return (f"{address} serves TLS: set {CA_SETTING} to the CA certificate (PEM) that "
                f"signed the service's certificate (its MEMSTRATA_SERVICE_TLS_CERT, when "
                f"self-signed)")
    if not speaks_tls and ca_file is not None:
        return (f"{address} serves plaintext, not TLS: unset {CA_SETTING}, or use the "
                f"service's TLS address")
    if speaks_tls and ca_file is not None:
        try:
            trusted = ssl.create_default_context(cafile=str(ca_file))
        except (OSError, ssl.SSLError) as exc:
            return f"{CA_SETTING}={ca_file} cannot be read as a PEM CA certificate ({exc})"
        trusted.set_alpn_protocols(["h2"])
        try:
            _handshake(host, port, trusted, timeout_s)
        except ssl.SSLCertVerificationError as exc:
            return (f"the certificate of {address} is not trusted with {CA_SETTING}="
                    f"{ca_file} ({exc.verify_message}): set it to the CA that signed the "
                    f"service's certificate")
        except (OSError, ssl.SSLError):
            return None
    return None
