"""Composition: open the stores and models the settings name, under the data dir's lock."""

from __future__ import annotations

from typing import Self

from memstrata.config import Settings
from memstrata.llm.usage import UsageMeter
from memstrata.memory.fingerprint import MemoryFingerprint, _refuse_other_encoder, embedder_id
from memstrata.redact.redactor import Redactor
from memstrata.store.types import DocStore, LexicalStore, VectorStore


class MemoryOpening(MemoryFingerprint):
    """:meth:`open`: a memory over the stores of one deployment."""

    @classmethod
    def open(cls, settings: Settings, *, read_only: bool = False,
             redactor: Redactor | None = None) -> Self:
        """Open the stores and models that ``settings`` names.

        ``settings`` come from the caller (an entry point's
        :func:`~memstrata.config.load_config`, or :func:`~memstrata.config.load_settings`).

        Embedded stores admit one process: a writer takes the data dir's lock
        file, and another process gets :class:`~memstrata.roles.DataDirLocked`
        naming the holder. ``read_only`` opens tantivy without an IndexWriter
        and SQLite with ``mode=ro``, so reads work while another process writes;
        but Qdrant Edge locks its files even to read, so with it a read-only open
        needs the lock too (and gets ``DataDirLocked`` while a writer runs). A
        failed open releases everything it took. ``redactor`` None: the one
        ``MEMSTRATA_REDACT_*`` describes (:func:`memstrata.redact.factory.open_redactor`).
        """
        from memstrata.embed.factory import open_embedder
        from memstrata.llm.factory import open_builder
        from memstrata.store.factory import (
            embedded_backends,
            open_doc_store,
            open_lexical_store,
            open_vector_store,
        )
        from memstrata.redact.factory import open_redactor
        from memstrata.store.lock import DataDirLock

        if redactor is None:  # a bad redaction setting stops the open before any store
            redactor = open_redactor()
        embedded = embedded_backends(settings)
        lock: DataDirLock | None = None
        if embedded and (not read_only or "qdrant-edge" in embedded):
            lock = DataDirLock(settings.data_dir, purpose="read" if read_only else "write")
            lock.acquire()
        opened: list[VectorStore | LexicalStore | DocStore] = []
        try:
            meter = UsageMeter()
            embedder = open_embedder(settings)
            builder = open_builder(settings, meter=meter)
            docs = open_doc_store(settings, read_only=read_only)
            opened.append(docs)
            # Before the vector store: it would refuse another encoder's dimension
            # with an error that names neither the encoder nor the way out.
            _refuse_other_encoder(settings, docs, embedder_id(embedder), embedder.dim)
            lexical = open_lexical_store(settings, read_only=read_only)
            opened.append(lexical)
            vectors = open_vector_store(settings, embedder.dim, read_only=read_only)
            opened.append(vectors)
            sessions: LexicalStore | None = None
            # A data dir written before the session index existed has none to read.
            if not (read_only and settings.lexical_backend == "tantivy"
                    and not settings.session_lexical_dir.is_dir()):
                sessions = open_lexical_store(settings, read_only=read_only, sessions=True)
                opened.append(sessions)
            memory = cls(settings, builder, embedder, vectors, lexical, docs, meter,
                         read_only=read_only, session_lexical=sessions, redactor=redactor)
            memory.check_fingerprint(record=not read_only)
        except BaseException:
            for store in reversed(opened):
                try:
                    store.close()
                except Exception:  # noqa: BLE001 - the original error is the one to report
                    pass
            if lock is not None:
                lock.release()
            raise
        if lock is not None:
            memory._releases.append(lock.release)
        return memory
