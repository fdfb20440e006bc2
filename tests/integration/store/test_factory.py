"""The store factory: settings pick the backend, and failures say what to do.

Proves that the default settings open the embedded stack under ``data_dir``;
that choosing a backend whose optional package is missing raises StoreError
with the ``pip install`` line; and that an unreachable server surfaces as a
StoreError naming the backend and the operation.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store
from memstrata.store.qdrant_edge import QdrantEdgeVectorStore
from memstrata.store.sqlite_docs import SqliteDocStore
from memstrata.store.tantivy_store import TantivyLexicalStore
from memstrata.store.types import StoreError


def test_defaults_open_the_embedded_stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [n for n in os.environ if n.startswith("MEMSTRATA_")]:
        monkeypatch.delenv(name)
    settings = Settings(data_dir=tmp_path)
    with (
        open_vector_store(settings, 8) as v,
        open_lexical_store(settings) as lx,
        open_doc_store(settings) as d,
    ):
        assert isinstance(v, QdrantEdgeVectorStore)
        assert isinstance(lx, TantivyLexicalStore)
        assert isinstance(d, SqliteDocStore)
    assert settings.vector_dir.is_dir()
    assert settings.lexical_dir.is_dir()
    assert settings.docs_path.is_file()


@pytest.mark.parametrize(
    ("module", "overrides", "opener", "extra"),
    [
        ("opensearchpy", {"lexical_backend": "opensearch"}, "lexical", "memstrata[opensearch]"),
        ("opensearchpy", {"doc_backend": "opensearch"}, "doc", "memstrata[opensearch]"),
        (
            "qdrant_client",
            {"vector_backend": "qdrant", "qdrant_url": "http://q:6333"},
            "vector",
            "memstrata[qdrant]",
        ),
    ],
)
def test_missing_extra_names_the_pip_extra(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    module: str,
    overrides: dict,
    opener: str,
    extra: str,
) -> None:
    settings = Settings(data_dir=tmp_path, opensearch_url="http://os:9200", **overrides)
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    open_store = {
        "lexical": lambda: open_lexical_store(settings),
        "doc": lambda: open_doc_store(settings),
        "vector": lambda: open_vector_store(settings, 8),
    }[opener]
    with pytest.raises(StoreError, match=re.escape(f"pip install '{extra}'")):
        open_store()


def test_unreachable_server_is_a_store_error(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path, lexical_backend="opensearch", opensearch_url="http://127.0.0.1:9"
    )
    with pytest.raises(StoreError, match=r"^opensearch: create index memstrata-l0 failed"):
        open_lexical_store(settings)


@pytest.mark.integration
def test_opensearch_indices_of_every_store_live_side_by_side(osmem_clone, tmp_path: Path) -> None:
    """One prefix holds the doc store's, the L0 BM25 and the session-level BM25 indices.

    The session-level index once took ``<prefix>-sessions``, the doc store's session
    index with a strict mapping, so every session document was refused.
    """
    from datetime import datetime

    from memstrata.model import Scope, SessionMeta
    from memstrata.store.types import LexicalDoc

    settings = Settings(data_dir=tmp_path, lexical_backend="opensearch", doc_backend="opensearch",
                        opensearch_url=osmem_clone.url, opensearch_index_prefix="side")
    scope = Scope(tenant_id="t", user_id="u")
    docs = open_doc_store(settings)
    units = open_lexical_store(settings)
    sessions = open_lexical_store(settings, sessions=True)
    try:
        docs.put_session(SessionMeta(scope=scope, session_id="s1",
                                     session_date=datetime(2024, 1, 2)))
        sessions.upsert([LexicalDoc(id="s1-doc", scope=scope, session_id="s1", turn_index=0,
                                    text="User: a red kayak called Gaivota")])
        sessions.flush()
        docs.flush()
        assert [h.session_id for h in sessions.search(scope, "kayak", 5)] == ["s1"]
        assert docs.get_session(scope, "s1") is not None
        assert units.count(scope) == 0
    finally:
        for store in (sessions, units, docs):
            store.close()
