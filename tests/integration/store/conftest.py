"""Fixtures that hand every contract test each implementation of a store interface.

Each ``*_backend`` fixture is parametrised over the implementations and yields
a :class:`Backend`: ``open()`` returns a new handle on the *same* storage (so
tests can close and reopen), and every handle is closed at teardown. Embedded
backends live in ``tmp_path``; OpenSearch backends talk HTTP to a fresh
osmem-server clone per test (the server itself starts once per session).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.store.types import DocStore, LexicalStore, VectorStore
from tests.integration.store.support import DIM, PREFIX, Backend, S


def _backend(backend: Backend[S]) -> Iterator[Backend[S]]:
    try:
        yield backend
    finally:
        backend.close_all()


def _osmem_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("osmem_clone").url


# -- vector stores ---------------------------------------------------------
@pytest.fixture(params=["qdrant-edge", "qdrant-local"])
def vector_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Backend[VectorStore]]:
    if request.param == "qdrant-edge":
        settings = Settings(data_dir=tmp_path, vector_backend="qdrant-edge")

        def opener(dim: int = DIM) -> VectorStore:
            return open_vector_store(settings, dim)
    else:
        from memstrata.store.qdrant_server import QdrantVectorStore

        def opener(dim: int = DIM) -> VectorStore:
            return QdrantVectorStore("units", dim, path=tmp_path / "qdrant")

    yield from _backend(Backend(request.param, opener))


@pytest.fixture
def vector_store(vector_backend: Backend[VectorStore]) -> VectorStore:
    return vector_backend.open()


# -- lexical stores --------------------------------------------------------
@pytest.fixture(params=["tantivy", pytest.param("opensearch", marks=pytest.mark.integration)])
def lexical_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Backend[LexicalStore]]:
    if request.param == "tantivy":
        settings = Settings(data_dir=tmp_path, lexical_backend="tantivy")
    else:
        settings = Settings(
            lexical_backend="opensearch",
            opensearch_url=_osmem_url(request),
            opensearch_index_prefix=PREFIX,
        )
    opener = lambda: open_lexical_store(settings)  # noqa: E731
    yield from _backend(Backend(request.param, opener, immediate=request.param == "tantivy"))


@pytest.fixture
def lexical_store(lexical_backend: Backend[LexicalStore]) -> LexicalStore:
    return lexical_backend.open()


# -- document stores -------------------------------------------------------
@pytest.fixture(params=["sqlite", pytest.param("opensearch", marks=pytest.mark.integration)])
def doc_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend[DocStore]]:
    if request.param == "sqlite":
        settings = Settings(data_dir=tmp_path, doc_backend="sqlite")
        opener: Callable[[], DocStore] = lambda: open_doc_store(settings)  # noqa: E731
    else:
        from memstrata.store.opensearch_docs import OpenSearchDocStore

        url = _osmem_url(request)
        # A page size of 2 makes every listing in the suite cross page boundaries.
        opener = lambda: OpenSearchDocStore(url, prefix=PREFIX, page_size=2)  # noqa: E731
    yield from _backend(Backend(request.param, opener))


@pytest.fixture
def doc_store(doc_backend: Backend[DocStore]) -> DocStore:
    return doc_backend.open()
