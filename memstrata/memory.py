"""The memory service: one object that writes conversations and reads them back.

:class:`Memory` ties a layer builder, an encoder and the three stores
together, and implements both roles of :mod:`memstrata.roles`: the CLI, the
stream worker, the Ray workers and the gRPC service all go through it, so
every entry point writes and reads the same way.

Writing has one path. :meth:`Memory.append` stores turns (upsert by index),
re-plans the session's windows and rebuilds and re-embeds only the windows
whose span or content changed; records are upserted by deterministic id, never
deleted first, so readers never lose a session while it grows. Batch
:meth:`Memory.ingest` is the same path over whole sessions, so both give the
same records. A caller that already holds more of a session (a stream worker
behind its topic) may ask :meth:`Memory.append_batch` to hold the session's
incomplete last window instead of indexing it provisionally now.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstrata.config import Settings
from memstrata.embed.types import Embedder
from memstrata.executor import LayerExecutor
from memstrata.fingerprint import SETTING_OF, IndexFingerprint, IndexMismatch
from memstrata.layers.l0 import build_window
from memstrata.layers.lazy import LazyLayers, SessionNotFound
from memstrata.layers.plan import (
    PLAN_KEY,
    PLAN_LAYER,
    PlannedWindow,
    SessionPlan,
    plan_session,
)
from memstrata.llm.types import LayerBuilder
from memstrata.llm.usage import UsageMeter
from memstrata.model import (
    KeyFacts,
    L0Unit,
    Message,
    Scope,
    Session,
    SessionHit,
    SessionMeta,
    Turn,
    TurnNotes,
    turns_digest,
)
from memstrata.profile_reads import all_profiles, entity_list, profiles_named
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.profiles.book import ProfileBook, SessionRead
from memstrata.profiles.llm_extract import profile_extractor
from memstrata.redact.redactor import Redactor
from memstrata.retrieval import indexing
from memstrata.retrieval.hybrid import HybridRetriever, RetrievalParams
from memstrata.retrieval.graph_expand import Expansion
from memstrata.route_plan import RoutePlan
from memstrata.retrieval.sessions import session_document
from memstrata.roles import AppendReport, DeleteReceipt, IngestReport, MemoryStats
from memstrata.store.outage import check_free_space
from memstrata.store.types import DocStore, LexicalDoc, LexicalStore, VectorRecord, VectorStore

__all__ = ["IndexMismatch", "IngestReport", "Memory", "ReadOnlyMemory", "SessionNotFound"]

log = logging.getLogger(__name__)

#: Deployment-wide records live in the doc store under a scope no real id can
#: spell ('#' is not allowed in ids), so they never meet a tenant's data.
_META_SCOPE = Scope.model_construct(tenant_id="#memstrata", user_id="#index")
_META_SESSION, _FINGERPRINT = "#index", "fingerprint"
#: Appended to the digest of a session that holds fallback units (see ``_commit``).
FALLBACK_DIGEST = ":fallback"
#: The digest of a session whose last window is held (not indexed yet): never a match.
HELD_DIGEST = ":held"


class ReadOnlyMemory(RuntimeError):
    """A write was attempted on a Memory opened with ``read_only=True``."""


@dataclass
class _Pending:
    """One session's write, prepared (turns stored, windows built) but not yet indexed."""

    meta: SessionMeta
    digest: str
    plan: SessionPlan
    closed: bool
    units: list[L0Unit]
    turns_written: list[int]
    #: Every turn of the session after this write (for its session-level BM25 document).
    all_turns: list[Turn] = field(default_factory=list)
    #: Windows (by digest) that the fallback built: left out of the stored plan, so
    #: the next write of the session builds them again.
    retry: set[str] = field(default_factory=set)
    #: The incomplete last window, held unbuilt (``append_batch(hold=...)``): also
    #: left out of the stored plan, so the next write of the session builds it.
    held: PlannedWindow | None = None
    #: The plan as stored before this write (rewritten only if it changes).
    stored_plan: dict[str, Any] | None = None
    #: The stored digest is already :data:`HELD_DIGEST` with this meta (nothing to mark).
    marked: bool = False
    #: The turns this write adds or replaces (written with the units, in one transaction).
    changed: list[Turn] = field(default_factory=list)
    #: The session did not exist before this write (a failed write removes it everywhere).
    new: bool = False
    #: Its profile occurrences, read with its windows (None: profiles off).
    profile: SessionRead | None = None


def embedder_id(embedder: Embedder) -> str:
    """The encoder's name plus its model, when it names one."""
    model = embedder.model_id
    return f"{embedder.name}:{model}" if model else embedder.name


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


def _refuse_other_encoder(settings: Settings, docs: DocStore, embedder: str,
                          dim: int) -> dict[str, Any] | None:
    """The stored fingerprint; :class:`IndexMismatch` if another encoder wrote the data dir."""
    stored = docs.get_layer(_META_SCOPE, _META_SESSION, _FINGERPRINT, "1")
    if stored is not None and (stored.get("embedder"), stored.get("dim")) != (embedder, dim):
        changes = "; ".join(
            f"{k}: {stored.get(k)!r} -> {v!r} ({SETTING_OF[k]})"
            for k, v in (("embedder", embedder), ("dim", dim)) if stored.get(k) != v)
        raise IndexMismatch(
            f"the data dir {settings.data_dir} was indexed with another encoder "
            f"({changes}). Vectors of two encoders cannot share an index: restore the old "
            f"setting, re-encode the stored vectors with `memstrata migrate`, or re-index "
            f"into a new data dir: MEMSTRATA_DATA_DIR=<new dir> memstrata ingest <your files>"
        )
    return stored


class Memory:
    """Write, search and read one deployment's memory (a MemoryReader and a MemoryWriter)."""

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

    @classmethod
    def open(cls, settings: Settings, *, read_only: bool = False,
             redactor: Redactor | None = None) -> "Memory":
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

    def check_fingerprint(self, *, record: bool = True) -> None:
        """Refuse stores indexed by another encoder; remember this index's fingerprint.

        Builder and window changes need no refusal: every session's digest
        carries the fingerprint, so ingesting a session again rebuilds it.
        """
        now = self.fingerprint
        stored = _refuse_other_encoder(self.settings, self.docs, now.embedder, now.dim)
        #: What changed since the data dir was last written (builder or window
        #: settings): sessions indexed before are rebuilt when ingested again.
        self.changed_settings = now.changes(stored) if stored is not None else []
        if record and stored != now.as_dict():
            self.docs.put_layer(_META_SCOPE, _META_SESSION, _FINGERPRINT, "1", now.as_dict())

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

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @functools.cached_property
    def fingerprint(self) -> IndexFingerprint:
        s = self.settings
        return IndexFingerprint(
            builder=self.builder.version,
            window_turns=s.l0_window_turns,
            window_overlap=s.l0_window_overlap,
            window_max_chars=s.l0_max_window_chars,
            embedder=embedder_id(self.embedder),
            dim=self.embedder.dim,
        )

    @functools.cached_property
    def _fp_key(self) -> str:
        return self.fingerprint.key

    def _digest(self, turns: Sequence[Turn]) -> str:
        return f"{self._fp_key}:{turns_digest(list(turns))}"

    # -- writing ------------------------------------------------------------
    def append(self, meta: SessionMeta, turns: Sequence[Turn], *,
               close: bool = False) -> AppendReport:
        """Add or replace turns of a session (by index) and index what they touch.

        A turn already stored with the same messages changes nothing; one whose
        messages changed (a reply arrived) is replaced, and every window that
        reads it is rebuilt. Flushing follows ``MEMSTRATA_FLUSH_POLICY``.
        """
        self._writable()
        turns = self.redactor.indexed_turns(meta.scope.tenant_id, turns)
        with self._write_lock:
            stored = self.docs.get_turns(meta.scope, meta.session_id)
            pending = self._prepare(meta, turns, stored, close=close)
            report = self._commit([pending])[0] if pending else self._empty(meta)
            self._maybe_flush()
        return report

    def append_messages(self, meta: SessionMeta, messages: Sequence[Message], *,
                        close: bool = False) -> AppendReport:
        """Add messages in arrival order, grouped into turns as ``group_turns`` does.

        A user message opens a turn; any other message joins the session's last
        turn (a session that opens with the assistant gets a turn of its own).
        A message whose ``source_id`` the session already holds is a replay and
        changes nothing.
        """
        self._writable()
        messages, dropped = self.redactor.messages(meta.scope.tenant_id, messages)
        with self._write_lock:
            if self._nothing_left(meta, messages, dropped):
                return self._empty(meta)
            stored = self.docs.get_turns(meta.scope, meta.session_id)
            turns, duplicates = _merge_messages(stored, messages)
            pending = self._prepare(meta, turns, stored, close=close)
            report = self._commit([pending])[0] if pending else self._empty(meta)
            report.duplicates = duplicates
            self._maybe_flush()
        return report

    def append_batch(self, items: Sequence[tuple[SessionMeta, Sequence[Message]]], *,
                     hold: Collection[tuple[Scope, str]] = ()) -> list[AppendReport]:
        """:meth:`append_messages` for several sessions in one write, one report each.

        Every session's changed windows are built first, then embedded in one
        encoder call and upserted once per store (what the stream worker does
        with a batch of events). Each session may appear once per call.

        Sessions in ``hold`` (scope, session id) keep an incomplete last window
        unbuilt: its turns are stored but not indexed (``AppendReport.held``),
        because the caller has more of the session waiting and would otherwise
        index the window provisionally only to rebuild it at the next message.
        The next write of the session (an append, even of no messages, or its
        close) builds it; the session's digest never matches until then.
        """
        self._writable()
        keys = [(meta.scope, meta.session_id) for meta, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError("append_batch: a session appears more than once in one call")
        held = set(hold)
        redacted = [(meta, *self.redactor.messages(meta.scope.tenant_id, messages))
                    for meta, messages in items]
        with self._write_lock:
            prepared: list[tuple[SessionMeta, _Pending | None, int]] = []
            for meta, messages, dropped in redacted:
                if self._nothing_left(meta, messages, dropped):
                    prepared.append((meta, None, 0))
                    continue
                stored = self.docs.get_turns(meta.scope, meta.session_id)
                turns, duplicates = _merge_messages(stored, messages)
                prepared.append((meta, self._prepare(
                    meta, turns, stored, close=False,
                    hold=(meta.scope, meta.session_id) in held), duplicates))
            committed = iter(self._commit([p for _, p, _ in prepared if p is not None]))
            reports = []
            for meta, pending, duplicates in prepared:
                report = next(committed) if pending is not None else self._empty(meta)
                report.duplicates = duplicates
                reports.append(report)
            self._maybe_flush()
        return reports

    def _nothing_left(self, meta: SessionMeta, messages: Sequence[Message],
                      dropped: int) -> bool:
        """Redaction dropped every message of a session the stores do not hold: writing
        it would list an empty session, so nothing is written."""
        return (bool(dropped) and not messages
                and self.docs.get_session(meta.scope, meta.session_id) is None)

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        """The session is finished: its last window is final (nothing provisional)."""
        self._writable()
        with self._write_lock:
            meta = self.session(scope, session_id)
            stored = self.docs.get_turns(scope, session_id)
            pending = self._prepare(meta, [], stored, close=True)
            report = self._commit([pending])[0] if pending else self._empty(meta)
            self._maybe_flush()
        return report

    def ingest(
        self,
        sessions: Iterable[Session],
        *,
        progress: Callable[[int], None] | None = None,
        batch_units: int = 256,
        report: IngestReport | None = None,
    ) -> IngestReport:
        """Write whole sessions through the append path, then flush.

        Idempotent: a session whose content and index fingerprint are unchanged
        since the last ingest is skipped. A session that lost turns is replaced
        as a whole; any other change rebuilds only the windows it touches. The
        session's digest is written after its units, so an interrupted ingest
        redoes the session next time instead of leaving it half-indexed.
        ``progress`` is called with the number of turns just handled. Pass a
        ``report`` to keep the counts of an ingest that is interrupted part way.
        """
        self._writable()
        report = report if report is not None else IngestReport()
        start = time.perf_counter()
        batch: list[_Pending] = []
        batched: set[tuple[Scope, str]] = set()
        size = 0
        with self._write_lock:
            for session in sessions:
                scope, sid = session.scope, session.session_id
                turns = self.redactor.turns(scope.tenant_id, session.turns)
                if not turns and session.turns:  # every message dropped: nothing to store
                    if progress:
                        progress(len(session.turns))
                    continue
                if turns != session.turns:
                    session = session.model_copy(update={"turns": turns})
                report.users.add(scope)
                if self.docs.session_digest(scope, sid) == self._digest(session.turns):
                    report.unchanged += 1
                    if progress:
                        progress(len(session.turns))
                    continue
                if (scope, sid) in batched:
                    self._commit(batch, report)  # its first copy is not written yet
                    batch, size, batched = [], 0, set()
                stored = self.docs.get_turns(scope, sid)
                keep = {t.index for t in session.turns}
                if any(t.index not in keep for t in stored):
                    self._delete(scope, sid)  # it shrank: the old turns must go
                    stored = []
                pending = self._prepare(session.meta, session.turns, stored, close=True)
                report.sessions += 1
                report.turns += len(session.turns)
                if pending is not None:
                    batch.append(pending)
                    batched.add((scope, sid))
                    size += len(pending.units)
                    report.units += len(pending.units)
                else:
                    report.committed += 1
                if size >= batch_units:
                    self._commit(batch, report)
                    batch, size, batched = [], 0, set()
                if progress:
                    progress(len(session.turns))
            self._commit(batch, report)
            self.flush()
        report.seconds = time.perf_counter() - start
        return report

    def _prepare(self, meta: SessionMeta, turns: Sequence[Turn], stored: Sequence[Turn], *,
                 close: bool, hold: bool = False) -> _Pending | None:
        """Store changed turns and build the windows they touch; None when nothing changed.

        ``meta`` only fills what the stored session lacks (:meth:`SessionMeta.filled_from`):
        a later message without a date or labels never erases the session's.
        ``hold``: an incomplete last window that needs building is left for later.
        """
        scope, sid = meta.scope, meta.session_id
        merged = {t.index: t for t in stored}
        changed: dict[int, Turn] = {}
        for t in turns:
            if merged.get(t.index) != t:
                changed[t.index] = t
        merged.update(changed)
        all_turns = [merged[i] for i in sorted(merged)]
        old_meta = self.docs.get_session(scope, sid)
        if old_meta is not None:  # the first date and labels stick, on every write path
            meta = old_meta.filled_from(meta)
        state = self.docs.get_layer(scope, sid, PLAN_LAYER, PLAN_KEY) if old_meta else None
        was_closed = bool(state and state.get("closed"))
        closed = close or (was_closed and not changed)
        fp = self._fp_key
        plan = plan_session(meta, all_turns, size=self.settings.l0_window_turns,
                            overlap=self.settings.l0_window_overlap,
                            max_chars=self.settings.l0_max_window_chars,
                            fingerprint=fp, stored=state, closed=closed)
        digest = self._digest(all_turns)
        if (not changed and not plan.stale and old_meta == meta and closed == was_closed
                and self.docs.session_digest(scope, sid) == digest):
            return None
        # Held: the open session's last window, when it reads the last turn (a turn
        # may still gain replies, so a full-sized window there is not final either).
        held = None
        if (hold and not closed and plan.stale and plan.stale[-1] is plan.windows[-1]
                and plan.windows[-1].span.stop == len(all_turns)):
            held = plan.stale[-1]
        # Held before with this meta: the stored digest already never matches.
        marked = (held is not None and old_meta == meta
                  and self.docs.session_digest(scope, sid) == HELD_DIGEST)
        # Nothing is written here: the turns, the units and the session's record go to
        # the doc store together, last, in one transaction (see ``_commit``).
        built: list[L0Unit] = []
        retry: set[str] = set()
        for w in plan.stale:
            if w is held:
                continue
            window_units = build_window(meta, all_turns, w.span, self.builder)
            if any(u.fallback for u in window_units):
                retry.add(w.digest)
            built.extend(window_units)
        # A unit that came out as it was stored (a later turn joined its window
        # but did not change its summary) is neither re-embedded nor rewritten.
        stored_units = ({u.id: u for u in self.docs.get_units(scope, [u.id for u in built])}
                        if built else {})
        units = [u for u in built if stored_units.get(u.id) != u]
        # Read now, with its windows: an LLM read is booked on this session's construction.
        profile = (self.profiles.read_session(meta, all_turns, held=held is not None)
                   if self.settings.profiles else None)
        return _Pending(meta, digest, plan, closed, units, sorted(changed), all_turns, retry,
                        held, state, marked, list(changed.values()), old_meta is None, profile)

    def _commit(self, batch: Sequence[_Pending],
                ingest: IngestReport | None = None) -> list[AppendReport]:
        """Embed and index the prepared units, then write the doc store in one transaction.

        The search stores come first and the doc store (raw turns, units, plans and
        each session's digest) last, in one transaction: a write that fails part way
        (a full disk) leaves no turn of the batch behind, so nothing reappears on a
        repair. Sessions the batch created are also removed from the search stores
        then (best effort). A full volume is refused before anything is written.
        """
        if not batch:
            return []
        if self._space_dir is not None:  # a full volume: refused before any store is touched
            check_free_space(self._space_dir, self.settings.min_free_mb)
        units = [u for p in batch for u in p.units]
        vectors: Any = (self.embedder.embed_documents([indexing.dense_text(u) for u in units])
                        if units else [])
        # A session holding its last window waits for its whole-session document too: the
        # held turns are not searchable yet either, and with hundreds of sessions open
        # rewriting each one's growing document at every message is most of the cost.
        documents = [session_document(p.meta, p.all_turns) for p in batch if p.held is None]
        try:
            self._index(units, vectors)
            if self.session_lexical is not None and documents:
                self.session_lexical.upsert(documents)
            # Entity and persona profiles: the batch's sessions re-read, the entities they
            # touch re-routed, written in the same transaction (memstrata.profiles).
            profiles = self.profiles.plan_reads(
                [(p.meta, p.profile) for p in batch if p.profile is not None])
            with self.docs.atomic():
                for p in batch:
                    if p.changed:
                        self.docs.put_turns(p.meta.scope, p.meta.session_id, p.changed)
                if units:
                    self.docs.put_units(units)
                for p in batch:
                    self._mark_done(p)
                for write in profiles:
                    write.apply(self.docs)
        except BaseException:
            self._forget_new(batch)
            raise
        reports = []
        for p in batch:
            scope, sid = p.meta.scope, p.meta.session_id
            if ingest is not None:
                ingest.committed += 1
                ingest.fallbacks += sum(1 for u in p.units if u.fallback)
            written = [u.turn_index for u in p.units]
            reports.append(AppendReport(
                scope=scope, session_id=sid, turns_written=p.turns_written,
                units_written=written,
                provisional=[i for i in written if i in p.plan.provisional],
                unit_ids=[u.id for u in p.units], embedded=len(p.units),
                held=list(p.held.targets) if p.held is not None else []))
        return reports

    def _mark_done(self, p: _Pending) -> None:
        """Store the session's plan and record (its digest says whether it is done)."""
        scope, sid = p.meta.scope, p.meta.session_id
        skip = p.retry | ({p.held.digest} if p.held is not None else set())
        payload = p.plan.payload(self._fp_key, p.closed, skip=skip)
        if payload != p.stored_plan:
            self.docs.put_layer(scope, sid, PLAN_LAYER, PLAN_KEY, payload)
        # A session with fallback units or a held window is stored but not "done":
        # its digest never matches, so the next write builds those windows.
        if p.held is not None:
            if not p.marked:
                self.docs.put_session(p.meta, digest=HELD_DIGEST)
        else:
            self.docs.put_session(p.meta, digest=p.digest + FALLBACK_DIGEST if p.retry
                                  else p.digest)

    def _forget_new(self, batch: Sequence[_Pending]) -> None:
        """After a failed write: remove the sessions it created from every store.

        Best effort (the store that failed may fail again); what stays is units no
        stored session names, which searches skip.
        """
        for p in batch:
            if not p.new:
                continue
            scope, sid = p.meta.scope, p.meta.session_id
            stores: list[VectorStore | LexicalStore | DocStore] = self._stores()[:-1]
            try:
                if self.docs.get_session(scope, sid) is not None:  # no transaction there
                    stores.append(self.docs)
            except Exception:  # noqa: BLE001 - the doc store is failing: leave it
                pass
            for store in stores:
                try:
                    store.delete(scope, sid)
                except Exception as exc:  # noqa: BLE001 - the write's own error is raised
                    log.warning("after a failed write, removing session %s/%s from %s failed "
                                "too (%s)", scope, sid, getattr(store, "name", "a store"),
                                type(exc).__name__)

    def _writable(self) -> None:
        if self.read_only:
            raise ReadOnlyMemory("this memory was opened read-only; open it without "
                                 "read_only to write")

    @staticmethod
    def _empty(meta: SessionMeta) -> AppendReport:
        return AppendReport(scope=meta.scope, session_id=meta.session_id)

    def _index(self, units: Sequence[L0Unit], vectors: Any) -> None:
        """BM25 documents and vectors of ``units`` (their doc-store records come after)."""
        if not units:
            return
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

    def flush(self) -> None:
        """Make all writes visible and build search indexes (can take a while at scale)."""
        if self.read_only:
            return
        with self._write_lock:
            for store in reversed(self._stores()):
                store.flush()
            self._last_flush = time.monotonic()

    @contextlib.contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Every write of this process waits while the block runs, the stores flushed first:
        their files stand still for a backup to copy (``memstrata.lifecycle.pause``)."""
        with self._write_lock:
            self.flush()
            yield

    def _maybe_flush(self) -> None:
        policy = self.settings.flush_policy
        if policy == "call" or (
            policy == "time"
            and time.monotonic() - self._last_flush >= self.settings.flush_interval_s
        ):
            self.flush()

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        """Forget one session, or everything of one user, in every store.

        The sessions' digests are cleared first, so a delete that fails part way
        leaves sessions that a re-ingest rebuilds (never skips) and that a
        second delete finishes; the receipt says which stores failed.
        """
        self._writable()
        receipt = DeleteReceipt(scope=scope, session_id=session_id)
        with self._write_lock:
            if session_id is None:
                metas = self.docs.list_sessions(scope)
            else:
                one = self.docs.get_session(scope, session_id)
                metas = [one] if one else []
            for meta in metas:
                self.docs.put_session(meta, digest=None)
            stores: list[tuple[str, Callable[[], int], Callable[[], None]]] = [
                ("vectors", lambda: self.vectors.count(scope),
                 lambda: self.vectors.delete(scope, session_id)),
                ("lexical", lambda: self.lexical.count(scope),
                 lambda: self.lexical.delete(scope, session_id)),
            ]
            if self.session_lexical is not None:
                whole = self.session_lexical
                stores.append(("session_lexical", lambda: whole.count(scope),
                               lambda: whole.delete(scope, session_id)))
            stores += [
                ("docs", lambda: self.docs.count_turns(scope),
                 lambda: self._delete_docs(scope, session_id)),
            ]
            # The doc store goes last: until it is done the sessions stay listed
            # (digest cleared), so the user can see them and delete again.
            for name, count, delete in stores:
                if receipt.errors:
                    receipt.errors[name] = "not attempted: an earlier store failed"
                    continue
                try:
                    before = count()
                    delete()
                    receipt.removed[name] = before - count()
                except Exception as exc:  # noqa: BLE001 - reported; a retry finishes the job
                    receipt.errors[name] = f"{type(exc).__name__}: {exc}"
            receipt.complete = not receipt.errors
            if session_id is None:  # nothing of a forgotten user stays, its queries included
                self.retriever.query_vectors.forget(scope)
        return receipt

    def _delete_docs(self, scope: Scope, session_id: str | None) -> None:
        """The doc store's part of a delete: a session's share of the profiles is removed
        (the profiles it touched rewritten) in the same transaction as its records; a
        user's profiles go with the user."""
        with self.docs.atomic():
            if session_id is not None:
                self.profiles.forget_session(scope, session_id).apply(self.docs)
            self.docs.delete(scope, session_id)

    def _delete(self, scope: Scope, session_id: str | None) -> None:
        self.vectors.delete(scope, session_id)
        self.lexical.delete(scope, session_id)
        if self.session_lexical is not None:
            self.session_lexical.delete(scope, session_id)
        self.docs.delete(scope, session_id)

    # -- seams for hosts (memstrata.roles.HostedMemory) -----------------------
    def use_layer_executor(self, executor: LayerExecutor) -> LayerExecutor:
        """Run later L1/L2 builds on ``executor`` (it must run this memory's builder);
        returns the executor it replaces, so a caller can put that one back."""
        return self.layers.use_executor(executor)

    def on_layer_read(self, hook: Callable[[str, bool], None]) -> Callable[[], None]:
        """Call ``hook(layer, from_cache)`` after every L1/L2 read; the result removes it."""
        return self.layers.on_read(hook)

    def warm_facts(self, scope: Scope, session_id: str) -> bool:
        """Read L1 through the cache as :meth:`facts` does; True when this call built it."""
        return not self.layers.facts(scope, session_id)[1]

    def warm_up(self) -> None:
        """Load the query encoder now (a fresh process's first search pays about 2 s)."""
        self.embedder.embed_queries(["warm up"])

    # -- reading --------------------------------------------------------------
    @property
    def max_query_chars(self) -> int:
        """The longest search query :meth:`search` takes (``MEMSTRATA_MAX_QUERY_CHARS``)."""
        return self.settings.max_query_chars

    def search(
        self,
        scope: Scope,
        queries: str | Sequence[str],
        top_k: int | None = None,
        route: RoutePlan | None = None,
    ) -> list[SessionHit]:
        """Rank the user's sessions for one or several queries (fused by max); ``route``
        may expand through the relation graph (memstrata.route_plan)."""
        qs = [queries] if isinstance(queries, str) else list(queries)
        return self.retriever.search(scope, qs, top_k=top_k, route=route)

    def search_expanded(
        self, scope: Scope, queries: str | Sequence[str], top_k: int | None = None,
        route: RoutePlan | None = None,
    ) -> tuple[list[SessionHit], Expansion | None]:
        """:meth:`search`, with what the relation graph's expansion did (for a trace)."""
        qs = [queries] if isinstance(queries, str) else list(queries)
        return self.retriever.search_expanded(scope, qs, top_k=top_k, route=route)

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

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        """Counts for one tenant, or for everything."""
        counts = self.docs.stats(tenant_id)
        layers = {k: v for k, v in counts.pop("layers", {}).items()
                  if k not in (PLAN_LAYER, _FINGERPRINT)}
        return MemoryStats(tenant_id=tenant_id, cached_layers=layers, **counts)

    def profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        """Every profile ``entity`` names, with its bullets' sources; raises
        ``ProfileNotFound`` (docs/profiles.md)."""
        return profiles_named(self.profiles, scope, entity)

    def entities(self, scope: Scope, *, everything: bool = False) -> list[EntitySummary]:
        """The user's profiled entities, the user and the assistant first."""
        return entity_list(self.profiles, scope, everything=everything)

    def entity_profiles(self, scope: Scope, *,
                        everything: bool = False) -> list[EntityProfile]:
        """Every listed entity's whole profile in one read of the records."""
        return all_profiles(self.profiles, scope, everything=everything)


def _merge_messages(stored: Sequence[Turn], messages: Sequence[Message]
                    ) -> tuple[list[Turn], int]:
    """New messages onto stored turns as ``group_turns`` groups them: (touched turns, replays).

    A user message opens a turn; any other message joins the last turn (a
    session that opens with the assistant gets a turn of its own). A message
    whose ``source_id`` the session already holds is a replay and is skipped.
    """
    by_index = {t.index: t for t in stored}
    known = {sid for t in stored for sid in t.source_ids}
    last = max(by_index, default=0)
    touched: set[int] = set()
    duplicates = 0
    for m in messages:
        if m.source_id is not None:
            if m.source_id in known:
                duplicates += 1
                continue
            known.add(m.source_id)
        if m.role == "user" or last == 0:
            last += 1
            by_index[last] = Turn(index=last, messages=[m])
        else:
            by_index[last] = Turn(index=last, messages=[*by_index[last].messages, m])
        touched.add(last)
    return [by_index[i] for i in sorted(touched)], duplicates
