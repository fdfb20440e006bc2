"""A client without the CA of a TLS service is told which setting to set (issue 31).

Before, the command line printed only gRPC's ``UNAVAILABLE: ... Socket closed``. Now a
failed connection is followed by one hint line naming ``MEMSTRATA_API_CA_FILE``: to
set it (a TLS service, no CA), to unset it (a plaintext service, a CA set), or to
point it at the CA that signed the service's certificate.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from memstrata.client.tls_hint import tls_hint
from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.conftest import Service
from tests.integration.query_service.test_server import certs  # noqa: F401


def _sessions(address: str, key: str, **env: str) -> Any:
    import memstrata.cli as cli

    return CliRunner().invoke(cli.app, ["sessions", "--user", "maya", "--remote", address],
                              env={"MEMSTRATA_API_KEY": key, "MEMSTRATA_API_TIMEOUT_S": "3",
                                   "COLUMNS": "200", **env})


def test_a_tls_service_without_the_ca_names_the_setting(service: Service,
                                                         certs: tuple[Path, Path],  # noqa: F811
                                                         tmp_path: Path):
    cert, key = certs
    settings = ServiceSettings(port=0, keys_file=service.keys.path, tls_cert=cert, tls_key=key)
    handle = service.loop.run(build_server(service.memory, settings,
                                           controller_settings=ControllerSettings(policy="rules"),
                                           turn_limits=TurnLimits()))
    other = tmp_path / "other-ca.pem"  # a CA that did not sign the service's certificate
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(tmp_path / "other.key"), "-out", str(other),
                    "-subj", "/CN=other"], check=True, capture_output=True)
    try:
        plain = _sessions(handle.address, service.keys.acme)
        trusted = _sessions(handle.address, service.keys.acme, MEMSTRATA_API_CA_FILE=str(cert))
        hint_wrong = tls_hint(handle.address, other)
    finally:
        service.loop.run(handle.stop(0))
    assert plain.exit_code == 4, plain.output
    assert "UNAVAILABLE" in plain.stderr
    assert "hint:" in plain.stderr and "serves TLS: set MEMSTRATA_API_CA_FILE" in plain.stderr
    assert trusted.exit_code == 0 and "s1-trip-plans" in trusted.stdout, trusted.output
    assert hint_wrong is not None and "MEMSTRATA_API_CA_FILE" in hint_wrong


def test_a_plaintext_service_with_a_ca_set_says_to_unset_it(
        service: Service, certs: tuple[Path, Path]):  # noqa: F811
    cert, _ = certs
    told = _sessions(service.address, service.keys.acme, MEMSTRATA_API_CA_FILE=str(cert))
    assert told.exit_code == 4, told.output
    assert "serves plaintext, not TLS: unset MEMSTRATA_API_CA_FILE" in told.stderr, told.stderr


def test_nothing_listening_gives_no_tls_hint():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert tls_hint(f"127.0.0.1:{port}", None, timeout_s=1) is None
