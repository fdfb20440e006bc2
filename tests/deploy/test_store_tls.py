"""CA bundles for OpenSearch and Qdrant over TLS reach their clients from the settings."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import ConfigError, Settings, load_settings
from memstrata.store.types import StoreError

class Stop(Exception):
    """Raised by the recording doubles once they have seen the client's arguments."""


def _ca_file(tmp_path: Path) -> Path:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    return ca


def test_opensearch_ca_file_reaches_the_client(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opensearchpy", reason="the opensearch extra")
    from memstrata.store import factory, opensearch_docs, opensearch_lexical
    from memstrata.store._opensearch import make_client

    ca = _ca_file(tmp_path)
    client = make_client("https://search.internal:9200", ca_file=str(ca))
    assert client.transport.kwargs["ca_certs"] == str(ca)
    assert client.transport.kwargs["verify_certs"] is True
    seen: list[dict[str, Any]] = []

    def recording_make_client(url: str, **kwargs: Any) -> Any:  # a TEST DOUBLE
        seen.append(kwargs)
        raise Stop

    monkeypatch.setattr(opensearch_lexical, "make_client", recording_make_client)
    monkeypatch.setattr(opensearch_docs, "make_client", recording_make_client)
    s = Settings(lexical_backend="opensearch", doc_backend="opensearch",
                 opensearch_url="https://search.internal:9200", opensearch_ca_file=ca)
    for open_store in (factory.open_lexical_store, factory.open_doc_store):
        with pytest.raises(Stop):
            open_store(s)
    assert [k["ca_file"] for k in seen] == [str(ca), str(ca)]


def test_qdrant_ca_file_reaches_the_client(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("qdrant_client", reason="the qdrant extra")
    from memstrata.store import factory, qdrant_server

    seen: list[dict[str, Any]] = []

    def recording_client(**kwargs: Any) -> Any:  # a TEST DOUBLE of QdrantClient
        seen.append(kwargs)
        raise Stop

    monkeypatch.setattr(qdrant_server, "QdrantClient", recording_client)
    ca = _ca_file(tmp_path)
    s = Settings(vector_backend="qdrant", qdrant_url="https://vectors.internal:6333",
                 qdrant_ca_file=ca)
    from memstrata.store.types import StoreError

    with pytest.raises(StoreError, match="Stop"):
        factory.open_vector_store(s, 384)
    assert seen[0]["verify"] == str(ca) and seen[0]["url"] == "https://vectors.internal:6333"
    seen.clear()
    with pytest.raises(StoreError, match="Stop"):
        factory.open_vector_store(Settings(vector_backend="qdrant",
                                           qdrant_url="https://vectors.internal:6333"), 384)
    assert "verify" not in seen[0]  # no CA file: the system's CAs, as before


def test_a_missing_ca_file_is_refused_naming_the_setting(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_OPENSEARCH_CA_FILE", str(tmp_path / "nope.pem"))
    with pytest.raises(ConfigError, match="MEMSTRATA_OPENSEARCH_CA_FILE"):
        load_settings()
    monkeypatch.delenv("MEMSTRATA_OPENSEARCH_CA_FILE")
    monkeypatch.setenv("MEMSTRATA_QDRANT_CA_FILE", str(tmp_path / "nope.pem"))
    with pytest.raises(ConfigError, match="MEMSTRATA_QDRANT_CA_FILE"):
        load_settings()


# -- a real HTTPS server whose certificate the client must (or must not) trust --------


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, made by openssl."""
    cert, key = directory / f"{name}.pem", directory / f"{name}-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )
    return cert, key


class _Refuse(BaseHTTPRequestHandler):
    """Answers every request with 400, so a client that got past TLS fails on something else."""

    def _answer(self) -> None:
        body = b'{"error": "this test server stores nothing", "status": 400}'
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, cert: Path, key: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Refuse)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        # The handshake runs in the handler's thread, so a client that refuses it stalls nothing.
        self.socket = ctx.wrap_socket(self.socket, server_side=True,
                                      do_handshake_on_connect=False)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client refusing our certificate is the point of these tests


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """(URL, the CA that signed the server, a CA that did not) for an HTTPS server on loopback."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make test certificates")
    d = tmp_path_factory.mktemp("tls")
    cert, key = _self_signed(d, "server")
    other, _ = _self_signed(d, "stranger")
    server = _TLSServer(cert, key)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert, other
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_an_untrusted_opensearch_certificate_names_the_setting(
        https_server: tuple[str, Path, Path]) -> None:
    pytest.importorskip("opensearchpy", reason="the opensearch extra")
    from memstrata.store import factory

    url, right, wrong = https_server
    for ca in (wrong, None):  # a CA that did not sign it; the system's CAs
        s = Settings(lexical_backend="opensearch", doc_backend="opensearch", opensearch_url=url,
                     opensearch_ca_file=ca, opensearch_max_retries=0)
        for open_store in (factory.open_lexical_store, factory.open_doc_store):
            with pytest.raises(ConfigError) as caught:
                open_store(s)
            msg = str(caught.value)
            assert "MEMSTRATA_OPENSEARCH_CA_FILE" in msg and url in msg, msg
            assert "certificate verify failed" in msg, msg  # the reason is kept
            assert isinstance(caught.value, StoreError)  # store-layer handlers still see it
    # The right CA: the handshake passes and the server's own answer is the error.
    s = Settings(lexical_backend="opensearch", doc_backend="opensearch", opensearch_url=url,
                 opensearch_ca_file=right, opensearch_max_retries=0)
    for open_store in (factory.open_lexical_store, factory.open_doc_store):
        with pytest.raises(StoreError) as caught:
            open_store(s)
        assert not isinstance(caught.value, ConfigError), caught.value
        assert "400" in str(caught.value) and "certificate" not in str(caught.value)


def test_an_untrusted_qdrant_certificate_names_the_setting(
        https_server: tuple[str, Path, Path]) -> None:
    pytest.importorskip("qdrant_client", reason="the qdrant extra")
    from memstrata.store import factory

    url, right, wrong = https_server
    with warnings.catch_warnings():
        # qdrant-client warns when its version check cannot reach (or read) the server.
        warnings.simplefilter("ignore", UserWarning)
        for ca in (wrong, None):
            s = Settings(vector_backend="qdrant", qdrant_url=url, qdrant_ca_file=ca)
            with pytest.raises(ConfigError) as caught:
                factory.open_vector_store(s, 384)
            msg = str(caught.value)
            assert "MEMSTRATA_QDRANT_CA_FILE" in msg and url in msg, msg
            assert "certificate verify failed" in msg, msg
            assert isinstance(caught.value, StoreError)
        s = Settings(vector_backend="qdrant", qdrant_url=url, qdrant_ca_file=right)
        with pytest.raises(StoreError) as caught:
            factory.open_vector_store(s, 384)
        assert not isinstance(caught.value, ConfigError), caught.value
        assert "400" in str(caught.value) and "certificate" not in str(caught.value)
