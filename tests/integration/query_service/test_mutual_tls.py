"""Mutual TLS on the query service (``MEMSTRATA_SERVICE_TLS_CLIENT_CA``) and the chart's probe.

The self-signed certificate of ``certs`` is its own CA: the server trusts clients it
signed, and the client presents it (``MEMSTRATA_API_TLS_CERT_FILE``/``_KEY_FILE``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.client import MemoryClient
from memstrata.client.errors import Unavailable
from memstrata.client.health_probe import main as probe
from memstrata.client.settings import ClientSettings
from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.integration.query_service.test_server import MAYA, certs  # noqa: F401

pytestmark = pytest.mark.integration


def test_a_client_ca_requires_a_client_certificate(service: Service,
                                                   certs: tuple[Path, Path]) -> None:  # noqa: F811
    cert, key = certs
    settings = ServiceSettings(port=0, keys_file=service.keys.path, tls_cert=cert, tls_key=key,
                               tls_client_ca=cert)
    handle = service.loop.run(build_server(service.memory, settings,
                                           controller_settings=ControllerSettings(policy="rules"),
                                           turn_limits=TurnLimits()))
    try:
        mtls = ClientSettings(ca_file=cert, tls_cert_file=cert, tls_key_file=key)
        with MemoryClient(handle.address, api_key=service.keys.acme, settings=mtls) as c:
            assert len(c.sessions(MAYA)) == 4
        with MemoryClient(handle.address, api_key=service.keys.acme, timeout_s=2,
                          settings=ClientSettings(ca_file=cert)) as no_cert:
            with pytest.raises(Unavailable):  # the handshake fails: no client certificate
                no_cert.sessions(MAYA)
        port = handle.address.rsplit(":", 1)[1]
        base = ["--address", f"127.0.0.1:{port}", "--ca", str(cert), "--server-name",
                "localhost", "--timeout", "3"]
        # The chart's exec probe: SERVING with the client pair, refused without it.
        assert probe([*base, "--cert", str(cert), "--key", str(key),
                      "--service", "memstrata.v1.MemoryService"]) == 0
        assert probe(base) == 1
    finally:
        service.loop.run(handle.stop(0))


def test_a_client_ca_without_tls_is_refused_naming_the_settings() -> None:
    with pytest.raises(ValueError, match="MEMSTRATA_SERVICE_TLS_CLIENT_CA needs"):
        ServiceSettings(tls_client_ca=Path("/ca.pem"))


def test_the_client_pair_comes_together(tmp_path: Path) -> None:
    from memstrata.client.settings import tls_credentials

    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    with pytest.raises(ValueError, match="MEMSTRATA_API_TLS_CERT_FILE and"):
        tls_credentials(ClientSettings(ca_file=ca, tls_cert_file=ca))
