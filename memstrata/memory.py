"""The memory service: one object that ingests sessions and reads them back.

:class:`Memory` ties a layer builder, an encoder and the three stores
together. The CLI, the stream processors, the Ray workers and the gRPC service
all go through it, so every entry point ingests and reads the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from memstrata.config import Settings, load_settings
from memstrata.embed.types import Embedder
from memstrata.layers.l0 import build_l0
from memstrata.layers.lazy import LazyLayers, SessionNotFound
from memstrata.llm.types import LayerBuilder
from memstrata.llm.usage import UsageMeter
from memstrata.model import (
    KeyFacts,
    L0Unit,
    Scope,
    Session,
    SessionHit,
    SessionMeta,
    Turn,
    TurnNotes,
    turns_digest,
)
from memstrata.retrieval import indexing
from memstrata.retrieval.hybrid import HybridRetriever, RetrievalParams
from memstrata.store.types import DocStore, LexicalDoc, LexicalStore, VectorRecord, VectorStore

__all__ = ["Memory", "IngestReport", "SessionNotFound"]


@dataclass
class IngestReport:
    """What one :meth:`Memory.ingest` call did."""

    sessions: int = 0
    turns: int = 0
    units: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    users: set[Scope] = field(default_factory=set)

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds if self.seconds > 0 else 0.0


class Memory:
    """Ingest, search and read one deployment's memory."""

    def __init__(
        self,
        settings: Settings,
        builder: LayerBuilder,
        embedder: Embedder,
        vectors: VectorStore,
        lexical: LexicalStore,
        docs: DocStore,
        meter: UsageMeter | None = None,
    ) -> None:
        self.settings = settings
        self.builder = builder
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.docs = docs
        self.meter = meter or UsageMeter()
        self.layers = LazyLayers(docs, builder)
        self.retriever = HybridRetriever(
            embedder, vectors, lexical, docs, RetrievalParams.from_settings(settings)
        )

    @classmethod
    def open(cls, settings: Settings | None = None) -> "Memory":
        """Open the stores and models that ``settings`` names."""
        from memstrata.embed.factory import open_embedder
        from memstrata.llm.factory import open_builder
        from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

        settings = settings or load_settings()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        meter = UsageMeter()
        embedder = open_embedder(settings)
        builder = open_builder(settings, meter=meter)
        docs = open_doc_store(settings)
        try:
            lexical = open_lexical_store(settings)
            vectors = open_vector_store(settings, embedder.dim)
        except Exception:
            docs.close()
            raise
        return cls(settings, builder, embedder, vectors, lexical, docs, meter)

    def close(self) -> None:
        for store in (self.vectors, self.lexical, self.docs):
            store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------
    def ingest(
        self,
        sessions: Iterable[Session],
        *,
        progress: Callable[[int], None] | None = None,
        batch_units: int = 256,
    ) -> IngestReport:
        """Store raw turns and build, embed and index L0 for each session.

        Idempotent: a session whose content and builder are unchanged since the
        last ingest is skipped; a changed one is replaced as a whole. Writes go
        raw turns first and the session's digest last, so an interrupted ingest
        redoes the session next time instead of leaving it half-indexed.
        ``progress`` is called with the number of turns just handled.
        """
        report = IngestReport()
        start = time.perf_counter()
        pending: list[L0Unit] = []
        done: list[tuple[SessionMeta, str]] = []
        for session in sessions:
            report.users.add(session.scope)
            digest = f"{self.builder.version}:{turns_digest(session.turns)}"
            if self.docs.session_digest(session.scope, session.session_id) == digest:
                report.unchanged += 1
                if progress:
                    progress(len(session.turns))
                continue
            if self.docs.get_session(session.scope, session.session_id) is not None:
                self._delete(session.scope, session.session_id)
            self.docs.put_session(session.meta, digest=None)
            self.docs.put_turns(session.scope, session.session_id, session.turns)
            units = build_l0(
                session.meta,
                session.turns,
                self.builder,
                window_turns=self.settings.l0_window_turns,
                overlap=self.settings.l0_window_overlap,
                max_chars=self.settings.l0_max_window_chars,
            )
            pending.extend(units)
            done.append((session.meta, digest))
            report.sessions += 1
            report.turns += len(session.turns)
            report.units += len(units)
            if len(pending) >= batch_units:
                self._index(pending, done)
                pending, done = [], []
            if progress:
                progress(len(session.turns))
        self._index(pending, done)
        self.flush()
        report.seconds = time.perf_counter() - start
        return report

    def _index(self, units: Sequence[L0Unit], done: Sequence[tuple[SessionMeta, str]]) -> None:
        if units:
            vectors = self.embedder.embed_documents([indexing.dense_text(u) for u in units])
            self.docs.put_units(units)
            self.lexical.upsert([
                LexicalDoc(id=u.id, scope=u.scope, session_id=u.session_id,
                           turn_index=u.turn_index, text=u.summary,
                           keywords=indexing.lexical_keywords(u))
                for u in units
            ])
            self.vectors.upsert([
                VectorRecord(id=u.id, scope=u.scope, session_id=u.session_id,
                             turn_index=u.turn_index, vector=v)
                for u, v in zip(units, vectors)
            ])
        # Upserts are durable when they return (WAL / per-call commit), so the
        # sessions can be marked done now; index optimisation waits for flush().
        for meta, digest in done:
            self.docs.put_session(meta, digest=digest)

    def flush(self) -> None:
        """Make all writes visible and build search indexes (can take a while at scale)."""
        for store in (self.docs, self.lexical, self.vectors):
            store.flush()

    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        """Forget one session, or everything of one user."""
        self._delete(scope, session_id)

    def _delete(self, scope: Scope, session_id: str | None) -> None:
        self.vectors.delete(scope, session_id)
        self.lexical.delete(scope, session_id)
        self.docs.delete(scope, session_id)

    # -- reading --------------------------------------------------------------
    def search(
        self,
        scope: Scope,
        queries: str | Sequence[str],
        top_k: int | None = None,
    ) -> list[SessionHit]:
        """Rank the user's sessions for one or several queries (fused by max)."""
        qs = [queries] if isinstance(queries, str) else list(queries)
        return self.retriever.search(scope, qs, top_k=top_k)

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        return self.docs.list_sessions(scope)

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        meta = self.docs.get_session(scope, session_id)
        if meta is None:
            raise SessionNotFound(f"no session {session_id!r} for {scope}")
        return meta

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        self.session(scope, session_id)
        return self.docs.session_units(scope, session_id)

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        """L1, built on first request and cached."""
        return self.layers.facts(scope, session_id)[0]

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        """L2, built on first request and cached."""
        return self.layers.notes(scope, session_id)[0]

    def raw(self, scope: Scope, session_id: str, turns: Iterable[int] | None = None) -> list[Turn]:
        """L3: verbatim turns (all, or only the given indices)."""
        self.session(scope, session_id)
        return self.docs.get_turns(scope, session_id, None if turns is None else set(turns))
