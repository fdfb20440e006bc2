"""The write engine: prepare a session's write, then commit a batch of them.

:meth:`MemoryBatches._prepare` stores nothing: it merges the turns, re-plans
the session's windows and builds the stale ones. :meth:`MemoryBatches._commit`
embeds the batch's units in one call, indexes them, and writes the doc store
(turns, units, plans, digests, profiles) last, in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memstrata.layers.l0 import build_window
from memstrata.layers.plan import (
    PLAN_KEY,
    PLAN_LAYER,
    PlannedWindow,
    SessionPlan,
    plan_session,
)
from memstrata.memory.fingerprint import MemoryFingerprint
from memstrata.model import L0Unit, SessionMeta, Turn
from memstrata.profiles.book import SessionRead
from memstrata.retrieval import indexing
from memstrata.retrieval.sessions import session_document
from memstrata.roles import AppendReport, IngestReport
from memstrata.store.outage import check_free_space
from memstrata.store.types import DocStore, LexicalDoc, LexicalStore, VectorRecord, VectorStore

log = logging.getLogger(__name__)

#: Appended to the digest of a session that holds fallback units (see ``_commit``).
FALLBACK_DIGEST = ":fallback"
#: The digest of a session whose last window is held (not indexed yet): never a match.
HELD_DIGEST = ":held"


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


class MemoryBatches(MemoryFingerprint):
    """Prepares and commits writes; the write entry points (:mod:`.write`) call it."""

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
