"""CA bundles for OpenSearch and Qdrant over TLS reach their clients from the settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstrata.config import ConfigError, Settings, load_settings



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
