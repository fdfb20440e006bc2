"""The state every room of :class:`~memstrata.memory.Memory` shares.

:class:`MemoryCore` holds what the constructor wires together (settings, the
stores, the layer cache, the retriever, the write lock) and the few store
primitives several rooms use: the list of stores, the read-only guard, a
session's record, dropping a session everywhere, closing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Self

from memstrata.config import Settings
from memstrata.embed.types import Embedder
from memstrata.layers.lazy import LazyLayers, SessionNotFound
from memstrata.llm.types import LayerBuilder
from memstrata.llm.usage import UsageMeter
from memstrata.model import Scope, SessionMeta
from memstrata.profiles.book import ProfileBook
from memstrata.profiles.llm_extract import profile_extractor
from memstrata.redact.redactor import Redactor
from memstrata.roles import LayerExecutor
from memstrata.retrieval.hybrid import HybridRetriever, RetrievalParams
from memstrata.store.types import DocStore, LexicalStore, VectorStore


class ReadOnlyMemory(RuntimeError):
    """A write was attempted on a Memory opened with ``read_only=True``."""


def layer_writer(docs: DocStore) -> Callable[[], DocStore]:
    """How a read-only memory writes the L1/L2 it builds into the cache.

    A SQLite file opened read-only gets a second, writable connection to the same
    file (opened on the first build): SQLite serialises writers across processes
    itself, so this is safe beside a process that holds the data dir's writer lock
    (that lock guards Qdrant Edge and tantivy, which admit one process). A store
    that is not opened read-only (OpenSearch) is written directly. When the file
    cannot be written, the layers stay in the process's memo (see ``LazyLayers``).
    """
    from memstrata.store.sqlite_docs import SqliteDocStore

    if isinstance(docs, SqliteDocStore) and docs.read_only:
        return lambda: SqliteDocStore(docs.path)
    return lambda: docs


class MemoryCore:
    """What a memory is made of; the rooms (opening, writes, deletes, reads) build on it."""

    def __init__(
        self,
        settings: Settings,
        builder: LayerBuilder,
        embedder: Embedder,
        vectors: VectorStore,
        lexical: LexicalStore,
        docs: DocStore,
        meter: UsageMeter | None = None,
        *,
        read_only: bool = False,
        session_lexical: LexicalStore | None = None,
        layer_executor: LayerExecutor | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.settings = settings
        #: The redaction step every write passes (``MEMSTRATA_REDACT_*``; off unless given).
        self.redactor = redactor if redactor is not None else Redactor.off()
        #: Opened for reading only: writes raise :class:`ReadOnlyMemory`.
        self.read_only = read_only
        self.builder = builder
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.docs = docs
        #: Entity and persona profiles kept in the doc store (``MEMSTRATA_PROFILES``).
        #: An LLM builder reads them with the LLM too (the rules when it fails).
        self.profiles = ProfileBook(docs, profile_extractor(builder, settings.l1_max_input_chars))
        #: BM25 over whole sessions (:mod:`memstrata.retrieval.sessions`); None: not kept.
        self.session_lexical = session_lexical
        self.meter = meter or UsageMeter()
        # A read-only memory caches its L1/L2 too, through a writer of its own (see
        # ``layer_writer``): reads never build the same layer twice.
        # ``layer_executor``: where L1/L2 builds run (in-process by default; a service
        # may hand in another, or register one later with ``use_layer_executor``).
        self.layers = LazyLayers(docs, builder, writer=layer_writer(docs) if read_only else None,
                                 executor=layer_executor,
                                 fallback_retry_s=settings.llm_fallback_retry_s)
        self.retriever = HybridRetriever(
            embedder, vectors, lexical, docs, RetrievalParams.from_settings(settings),
            session_lexical=session_lexical,
        )
        #: Writes from several threads of one process go one at a time.
        self._write_lock = threading.RLock()
        from memstrata.store.factory import embedded_backends

        #: The volume whose free space writes check (embedded stores only).
        self._space_dir = settings.data_dir if embedded_backends(settings) else None
        self._last_flush = time.monotonic()
        self._releases: list[Callable[[], None]] = []
        self.changed_settings: list[str] = []

    def _stores(self) -> list[VectorStore | LexicalStore | DocStore]:
        """Every store this memory writes, in the order deletes go (docs last)."""
        extra = [self.session_lexical] if self.session_lexical is not None else []
        return [self.vectors, self.lexical, *extra, self.docs]

    def close(self) -> None:
        try:
            self.layers.close()
            for store in self._stores():
                store.close()
        finally:
            while self._releases:
                self._releases.pop()()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _writable(self) -> None:
        if self.read_only:
            raise ReadOnlyMemory("this memory was opened read-only; open it without "
                                 "read_only to write")

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        meta = self.docs.get_session(scope, session_id)
        if meta is None:
            raise SessionNotFound(f"no session {session_id!r} for {scope}")
        return meta

    def _delete(self, scope: Scope, session_id: str | None) -> None:
        self.vectors.delete(scope, session_id)
        self.lexical.delete(scope, session_id)
        if self.session_lexical is not None:
            self.session_lexical.delete(scope, session_id)
        self.docs.delete(scope, session_id)
