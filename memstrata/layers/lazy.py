"""L1 and L2: built the first time someone reads them, then cached.

The cache key is (tenant, user, session, layer, builder version). Each cached
payload also records a digest of the turns it was built from, so a session
that grew since (streaming ingestion appends turns) is rebuilt rather than
served stale. Concurrent first reads of the same key build once
(single-flight within the process; :mod:`workers` extends this across a Ray
cluster). Where a build runs is the :class:`~memstrata.roles.LayerExecutor`'s
business: in-process by default, on Ray actors when a service hands one in; the
cache is written here either way, with the same key, digest and builder version.

A layer that the extractive fallback built because the LLM failed is cached
with its mark and the time it was built: it is served for
``fallback_retry_s`` (so a down LLM is not asked again on every read), then
the next read builds it again.

A read-only memory caches too (:class:`~memstrata.memory.Memory` hands it a
``writer`` that opens a writable connection to the same store on the first
miss), so ``ask``, ``show`` and ``search`` build a layer once, not on every
read. When the cache cannot be written (a read-only file, say) the built
layer is kept in this object's memo instead: the same layer is never built
twice for one session and builder version within a process. Every read is
reported to the current answer's :class:`~memstrata.llm.budget.AnswerBudget`
(cached or built), which the controller's trace shows.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any, Iterator, TypeVar

from memstrata.contract import SessionNotFound
from memstrata.layers.executor import LocalLayerExecutor
from memstrata.llm import budget as answer_budget
from memstrata.llm.budget import LayerSource
from memstrata.llm.types import LayerBuilder
from memstrata.model import (
    KeyFact,
    KeyFacts,
    Scope,
    SessionMeta,
    Turn,
    TurnNote,
    TurnNotes,
    turns_digest,
)
from memstrata.roles import LayerExecutor, LayerRequest
from memstrata.store.types import DocStore, StoreError

T = TypeVar("T")
log = logging.getLogger(__name__)
#: Told of every L1/L2 read that returned: the layer ("L1", "L2") and whether the cache
#: (or the memo) had it. A service counts its cache hits with one (``workers``).
LayerReadHook = Callable[[str, bool], None]
#: Layers a memo keeps (those built but not stored), least recently used dropped first.
MEMO_SIZE = 2048


class LazyLayers:
    """Reads L1/L2 through the cache, building them on a miss."""

    def __init__(self, docs: DocStore, builder: LayerBuilder, *, cache: bool = True,
                 writer: Callable[[], DocStore] | None = None,
                 executor: LayerExecutor | None = None, fallback_retry_s: float = 300.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.docs = docs
        self.builder = builder
        #: Runs the builds; the builder version in the cache key is ``builder``'s, so a
        #: remote executor must run the same builder.
        self.executor: LayerExecutor = executor or LocalLayerExecutor(builder)
        self.fallback_retry_s = fallback_retry_s
        self._clock = clock
        #: False: built layers are not written to the store (only to the memo).
        self.cache = cache
        #: Opens the store built layers are written to (``docs`` when None); called on
        #: the first write, so a reader that never builds opens no writer.
        self._writer_factory = writer
        self._writer: DocStore | None = None if writer is not None else docs
        self._write_failed = False
        self._writer_lock = threading.Lock()
        #: Layers built but not stored (the cache refused them): key -> payload.
        self._memo: OrderedDict[tuple[str, ...], dict[str, Any]] = OrderedDict()
        #: One lock per key being built right now, with how many threads use it;
        #: dropped when the last one leaves, so the table never outgrows the
        #: builds in flight.
        self._locks: dict[tuple[str, ...], tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()
        #: How many times a layer was actually built (not served from cache).
        self.builds = 0
        self._read_hooks: list[LayerReadHook] = []

    def use_executor(self, executor: LayerExecutor) -> LayerExecutor:
        """Run the builds of later misses on ``executor``; returns the one it replaces.

        The cache key keeps ``builder``'s version, so ``executor`` must run that builder.
        """
        previous, self.executor = self.executor, executor
        return previous

    def on_read(self, hook: LayerReadHook) -> Callable[[], None]:
        """Call ``hook`` after every L1/L2 read that returns; the result removes it."""
        self._read_hooks.append(hook)
        return lambda: self._read_hooks.remove(hook)

    def _told(self, layer: str, hit: bool) -> None:
        for hook in list(self._read_hooks):
            hook(layer, hit)

    @contextmanager
    def _single_flight(self, key: tuple[str, ...]) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)

    @property
    def in_flight(self) -> int:
        """Keys being built (or waited on) right now."""
        with self._guard:
            return len(self._locks)

    def _session(self, scope: Scope, session_id: str) -> tuple[SessionMeta, list[Turn]]:
        meta = self.docs.get_session(scope, session_id)
        if meta is None:
            raise SessionNotFound(f"no session {session_id!r} for {scope}")
        return meta, self.docs.get_turns(scope, session_id)

    def _cached(
        self,
        scope: Scope,
        session_id: str,
        layer: str,
    ) -> tuple[SessionMeta, list[dict[str, Any]], bool, str | None]:
        """(meta, items, from the cache, fallback reason or None)."""
        meta, turns = self._session(scope, session_id)
        digest = turns_digest(turns)
        version = self.builder.version
        key = (scope.tenant_id, scope.user_id, session_id, layer, version)

        def fresh(hit: dict[str, Any] | None) -> dict[str, Any] | None:
            if hit is None or hit.get("digest") != digest:
                return None
            if hit.get("fallback") and (
                    self._clock() - float(hit.get("built_at", 0.0)) >= self.fallback_retry_s):
                return None  # built without the LLM a while ago: try the LLM again
            return hit

        def lookup() -> tuple[dict[str, Any], LayerSource] | None:
            with self._guard:
                memo = fresh(self._memo.get(key))
                if memo is not None:
                    self._memo.move_to_end(key)
                    return memo, "memo"
            hit = fresh(self.docs.get_layer(scope, session_id, layer, version))
            return (hit, "cache") if hit is not None else None

        def served(found: tuple[dict[str, Any], LayerSource]
                   ) -> tuple[SessionMeta, list[dict[str, Any]], bool, str | None]:
            hit, source = found
            _report(session_id, layer, source, hit.get("fallback"))
            return meta, list(hit["items"]), True, hit.get("fallback")

        found = lookup()
        if found is not None:
            return served(found)
        with self._single_flight(key):
            found = lookup()
            if found is not None:
                return served(found)
            # A failed build raises here: nothing is cached, the next read tries again.
            result = self.executor.build_layer(LayerRequest(
                scope=scope, session_id=session_id, layer=layer, builder_version=version,
                digest=digest, meta=meta, turns=tuple(turns)))
            built = list(result.items)
            payload: dict[str, Any] = {"digest": digest, "items": built}
            if result.fallback:
                payload.update(fallback=result.fallback, built_at=self._clock())
            if not (self.cache and self._store(scope, session_id, layer, version, payload)):
                with self._guard:
                    self._memo[key] = payload
                    while len(self._memo) > MEMO_SIZE:
                        self._memo.popitem(last=False)
            self.builds += 1
            _report(session_id, layer, "built", result.fallback)
            return meta, built, False, result.fallback

    def _store(self, scope: Scope, session_id: str, layer: str, version: str,
               payload: dict[str, Any]) -> bool:
        """Write a built layer to the cache; False when it cannot be (the memo keeps it).

        A store that cannot be opened for writing, or refuses the write, is not
        tried again by this object: the reads go on, served from the memo.
        """
        if self._write_failed:
            return False
        try:
            with self._writer_lock:
                if self._writer is None and self._writer_factory is not None:
                    self._writer = self._writer_factory()
                writer = self._writer
            if writer is None:
                return False
            writer.put_layer(scope, session_id, layer, version, payload)
            return True
        except (StoreError, OSError) as exc:
            if self._writer_factory is None:
                raise  # a writable memory's own store failing is an error, as ever
            self._write_failed = True
            log.warning("cannot write the L1/L2 cache (%s); layers built from now on are "
                        "kept in this process only", exc)
            return False

    def close(self) -> None:
        """Close the writer this object opened (not ``docs``, which its owner closes)."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None and writer is not self.docs:
            writer.close()

    def facts(self, scope: Scope, session_id: str) -> tuple[KeyFacts, bool]:
        """L1 of a session and whether it came from the cache."""
        meta, items, hit, fallback = self._cached(scope, session_id, "L1")
        facts = [KeyFact.model_validate(i) for i in items]
        self._told("L1", hit)
        return KeyFacts(meta=meta, builder=self.builder.version, facts=facts,
                        fallback=fallback), hit

    def notes(self, scope: Scope, session_id: str) -> tuple[TurnNotes, bool]:
        """L2 of a session and whether it came from the cache."""
        meta, items, hit, fallback = self._cached(scope, session_id, "L2")
        notes = [TurnNote.model_validate(i) for i in items]
        self._told("L2", hit)
        return TurnNotes(meta=meta, builder=self.builder.version, notes=notes,
                         fallback=fallback), hit


def _report(session_id: str, layer: str, source: LayerSource, fallback: str | None) -> None:
    """Tell the answer being worked on (if any) where this layer read came from."""
    answer = answer_budget.current()
    if answer is not None:
        answer.layer_read(session_id, layer, source, fallback)
