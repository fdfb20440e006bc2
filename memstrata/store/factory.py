"""Open the stores that :class:`~memstrata.config.Settings` selects.

Backends are imported only when chosen, so the embedded default runs without
the optional extras installed; choosing a backend whose extra is missing fails
at start-up with the ``pip install`` line that fixes it.
"""

from __future__ import annotations

import importlib

from pydantic import SecretStr

from memstrata.config import Settings
from memstrata.store.types import DocStore, LexicalStore, StoreError, VectorStore

#: Backends whose files live in the data dir and admit one process.
EMBEDDED = {"qdrant-edge", "tantivy", "sqlite"}


def embedded_backends(settings: Settings) -> list[str]:
    """The configured backends that keep their data in ``settings.data_dir``."""
    chosen = (settings.vector_backend, settings.lexical_backend, settings.doc_backend)
    return [b for b in chosen if b in EMBEDDED]


def _require(module: str, backend: str, install: str) -> None:
    """Fail with an actionable message if ``module`` (a backend's client library) is missing."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise StoreError(
            f"{backend}: the Python package for this backend is not installed "
            f"({exc}); run: pip install {install}"
        ) from exc


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()


def _path(value: object | None) -> str | None:
    return None if value is None else str(value)


def open_vector_store(settings: Settings, dim: int, *, read_only: bool = False) -> VectorStore:
    """The configured vector store for ``dim``-dimensional embeddings."""
    if settings.vector_backend == "qdrant":
        _require("qdrant_client", "qdrant", "'memstrata[qdrant]'")
        from memstrata.store.qdrant_server import QdrantVectorStore

        return QdrantVectorStore(
            settings.qdrant_collection,
            dim,
            url=settings.qdrant_url,
            api_key=_secret(settings.qdrant_api_key),
            ca_file=_path(settings.qdrant_ca_file),
        )
    _require("qdrant_edge", "qdrant-edge", "qdrant-edge-py")
    from memstrata.store.qdrant_edge import QdrantEdgeVectorStore

    return QdrantEdgeVectorStore(
        settings.vector_dir,
        dim,
        read_only=read_only,
        hnsw_m=settings.qdrant_edge_hnsw_m,
        hnsw_ef_construct=settings.qdrant_edge_hnsw_ef_construct,
        full_scan_threshold_kb=settings.qdrant_edge_full_scan_threshold_kb,
        hnsw_ef=settings.qdrant_edge_hnsw_ef,
        search_threads=settings.qdrant_edge_search_threads,
    )


def open_lexical_store(settings: Settings, *, read_only: bool = False,
                       sessions: bool = False) -> LexicalStore:
    """The configured BM25 store (``read_only``: no tantivy IndexWriter).

    ``sessions`` opens the session-level index (one document per session) in
    its own directory or OpenSearch index instead of the L0 one.
    """
    if settings.lexical_backend == "opensearch":
        _require("opensearchpy", "opensearch", "'memstrata[opensearch]'")
        from memstrata.store.opensearch_lexical import OpenSearchLexicalStore

        return OpenSearchLexicalStore(
            settings.opensearch_url,
            prefix=settings.opensearch_index_prefix,
            user=settings.opensearch_user,
            password=_secret(settings.opensearch_password),
            ca_file=_path(settings.opensearch_ca_file),
            name="session-text" if sessions else "l0",  # not "-sessions": the doc store has it
            timeout=settings.opensearch_timeout_s,
            max_retries=settings.opensearch_max_retries,
        )
    _require("tantivy", "tantivy", "tantivy")
    from memstrata.store.tantivy_store import TantivyLexicalStore

    path = settings.session_lexical_dir if sessions else settings.lexical_dir
    return TantivyLexicalStore(path, heap_size=settings.tantivy_heap_bytes,
                               read_only=read_only,
                               commit_on_write=settings.tantivy_commit == "write",
                               reopen_commits=settings.tantivy_reopen_commits)


def open_doc_store(settings: Settings, *, read_only: bool = False) -> DocStore:
    """The configured document store (``read_only``: SQLite opened with mode=ro)."""
    if settings.doc_backend == "opensearch":
        _require("opensearchpy", "opensearch", "'memstrata[opensearch]'")
        from memstrata.store.opensearch_docs import OpenSearchDocStore

        return OpenSearchDocStore(
            settings.opensearch_url,
            prefix=settings.opensearch_index_prefix,
            user=settings.opensearch_user,
            password=_secret(settings.opensearch_password),
            ca_file=_path(settings.opensearch_ca_file),
            timeout=settings.opensearch_timeout_s,
            max_retries=settings.opensearch_max_retries,
        )
    from memstrata.store.sqlite_docs import SqliteDocStore

    return SqliteDocStore(settings.docs_path, read_only=read_only)
