"""The TLS health probe the chart's exec probes run (kubelet gRPC probes are plaintext only)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from memstrata.client.health_probe import main


def _pair(tmp: Path, name: str, cn: str, issuer: tuple | None = None,
          *, ca: bool = False) -> tuple:
    """A P-256 key and certificate named ``cn`` (self-signed when ``issuer`` is None)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    signer_key, signer_name = (key, subject) if issuer is None else (issuer[0], issuer[1].subject)
    now = dt.datetime.now(dt.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(signer_name)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=1))
         .not_valid_after(now + dt.timedelta(hours=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        b = (b.add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                   ExtendedKeyUsageOID.CLIENT_AUTH]),
                            critical=False))
    cert = b.sign(signer_key, hashes.SHA256())
    (tmp / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return key, cert


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pki")
    ca = _pair(tmp, "ca", "test-ca", ca=True)
    _pair(tmp, "tls", "rel-memstrata.memory.svc", ca)
    _pair(tmp, "other-ca", "other-ca", ca=True)
    return tmp


def _serve(pki: Path, *, client_ca: bool, status: int) -> tuple[grpc.Server, int]:
    """A gRPC server with TLS as query_service.server builds it, answering health only."""
    server = grpc.server(ThreadPoolExecutor(2))
    servicer = health.HealthServicer()
    servicer.set("", status)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    ca = (pki / "ca.crt").read_bytes() if client_ca else None
    creds = grpc.ssl_server_credentials(
        [((pki / "tls.key").read_bytes(), (pki / "tls.crt").read_bytes())],
        root_certificates=ca, require_client_auth=ca is not None)
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    return server, port


@pytest.fixture
def serving(pki: Path) -> Iterator[int]:
    server, port = _serve(pki, client_ca=False, status=health_pb2.HealthCheckResponse.SERVING)
    yield port
    server.stop(None)


def _args(pki: Path, port: int, *extra: str, ca: str = "ca.crt") -> list[str]:
    return ["--address", f"127.0.0.1:{port}", "--ca", str(pki / ca),
            "--server-name", "rel-memstrata.memory.svc", "--timeout", "2", *extra]


def test_probe_passes_over_tls_and_fails_on_an_untrusted_server(pki: Path, serving: int,
                                                               capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    assert main(_args(pki, serving)) == 0
    assert main(_args(pki, serving, ca="other-ca.crt")) == 1
    assert "health probe of 127.0.0.1" in capsys.readouterr().err


def test_probe_with_mutual_tls_needs_the_client_pair(pki: Path) -> None:
    server, port = _serve(pki, client_ca=True, status=health_pb2.HealthCheckResponse.SERVING)
    try:
        assert main(_args(pki, port)) == 1  # no client certificate: refused
        assert main(_args(pki, port, "--cert", str(pki / "tls.crt"),
                          "--key", str(pki / "tls.key"))) == 0
    finally:
        server.stop(None)


def test_probe_fails_while_not_serving(pki: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server, port = _serve(pki, client_ca=False,
                          status=health_pb2.HealthCheckResponse.NOT_SERVING)
    try:
        assert main(_args(pki, port)) == 1
        assert "NOT_SERVING" in capsys.readouterr().err
    finally:
        server.stop(None)
