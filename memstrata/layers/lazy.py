"""L1 and L2: built the first time someone reads them, then cached.

The cache key is (tenant, user, session, layer, builder version). Each cached
payload also records a digest of the turns it was built from, so a session
that grew since (streaming ingestion appends turns) is rebuilt rather than
served stale. Concurrent first reads of the same key build once
(single-flight within the process; :mod:`workers` extends this across a Ray
cluster). Where a build runs is the :class:`~memstrata.executor.LayerExecutor`'s
business: in-process by default, on Ray actors when a service hands one in; the
cache is written here either way, with the same key, digest and builder version.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, TypeVar

from memstrata.executor import LayerExecutor, LayerRequest, LocalLayerExecutor

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
from memstrata.store.types import DocStore

T = TypeVar("T")


class SessionNotFound(KeyError):
    """The scope has no session with that id."""


class LazyLayers:
    """Reads L1/L2 through the cache, building them on a miss."""

    def __init__(self, docs: DocStore, builder: LayerBuilder, *, cache: bool = True,
                 executor: LayerExecutor | None = None) -> None:
        self.docs = docs
        self.builder = builder
        #: Runs the builds; the builder version in the cache key is ``builder``'s, so a
        #: remote executor must run the same builder.
        self.executor: LayerExecutor = executor or LocalLayerExecutor(builder)
        #: False for a read-only memory: layers are built on each read, never stored.
        self.cache = cache
        #: One lock per key being built right now, with how many threads use it;
        #: dropped when the last one leaves, so the table never outgrows the
        #: builds in flight.
        self._locks: dict[tuple[str, ...], tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()
        #: How many times a layer was actually built (not served from cache).
        self.builds = 0

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
    ) -> tuple[SessionMeta, list[dict[str, Any]], bool]:
        meta, turns = self._session(scope, session_id)
        digest = turns_digest(turns)
        version = self.builder.version

        def lookup() -> list[dict[str, Any]] | None:
            hit = self.docs.get_layer(scope, session_id, layer, version)
            if hit is not None and hit.get("digest") == digest:
                return list(hit["items"])
            return None

        items = lookup()
        if items is not None:
            return meta, items, True
        key = (scope.tenant_id, scope.user_id, session_id, layer, version)
        with self._single_flight(key):
            items = lookup()
            if items is not None:
                return meta, items, True
            # A failed build raises here: nothing is cached, the next read tries again.
            built = self.executor.build_layer(LayerRequest(
                scope=scope, session_id=session_id, layer=layer, builder_version=version,
                digest=digest, meta=meta, turns=tuple(turns)))
            if self.cache:
                self.docs.put_layer(scope, session_id, layer, version,
                                    {"digest": digest, "items": built})
            self.builds += 1
            return meta, built, False

    def facts(self, scope: Scope, session_id: str) -> tuple[KeyFacts, bool]:
        """L1 of a session and whether it came from the cache."""
        meta, items, hit = self._cached(scope, session_id, "L1")
        facts = [KeyFact.model_validate(i) for i in items]
        return KeyFacts(meta=meta, builder=self.builder.version, facts=facts), hit

    def notes(self, scope: Scope, session_id: str) -> tuple[TurnNotes, bool]:
        """L2 of a session and whether it came from the cache."""
        meta, items, hit = self._cached(scope, session_id, "L2")
        notes = [TurnNote.model_validate(i) for i in items]
        return TurnNotes(meta=meta, builder=self.builder.version, notes=notes), hit
