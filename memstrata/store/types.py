"""The three store interfaces. Implementations live beside this module.

* :class:`VectorStore` -- dense vectors of L0 units (Qdrant server, Qdrant Edge).
* :class:`LexicalStore` -- BM25 over L0 summaries plus a separate keywords
  field, English stemming (OpenSearch, tantivy).
* :class:`DocStore` -- session metadata, raw turns (L3), L0 units and the cached
  L1/L2 layers (SQLite embedded, OpenSearch in production).

Every read takes a :class:`~memstrata.model.Scope` and must return only that
tenant's and that user's records. The shared contract tests in
``tests/integration/store`` hold every implementation to the same behaviour.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from memstrata.model import L0Unit, Scope, SessionMeta, Turn


#: BM25 over the two L0 fields is term-centric: a query term scores its better
#: field plus this share of the other, so a word in both the summary and the
#: keywords does not count twice. Every lexical backend uses the same value.
FIELD_TIE_BREAKER = 0.3


class StoreError(RuntimeError):
    """A backend failed; the message names the backend and the operation."""


class Hit(NamedTuple):
    """One ranked L0 unit from a vector or lexical search (best first)."""

    unit_id: str
    session_id: str
    score: float


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """An L0 unit's embedding plus the fields needed to filter it."""

    id: str
    scope: Scope
    session_id: str
    turn_index: int
    vector: np.ndarray


@dataclass(frozen=True, slots=True)
class LexicalDoc:
    """An L0 unit as the BM25 index sees it: summary text and a keywords field."""

    id: str
    scope: Scope
    session_id: str
    turn_index: int
    text: str
    keywords: list[str] = field(default_factory=list)


class SessionTally(NamedTuple):
    """One stored session and how many raw turns and L0 units the doc store holds for it."""

    scope: Scope
    session_id: str
    turns: int
    units: int
    digest: str | None


class CachedLayer(NamedTuple):
    """One cached layer payload of a session, under the builder version that built it."""

    layer: str
    builder: str
    payload: dict[str, Any]


class _Closable(ABC):  # noqa: B024 - a base with defaults, never instantiated alone
    name: str = "store"

    def flush(self) -> None:  # noqa: B027 - a no-op by default, on purpose
        """Make writes durable and visible to searches (no-op where writes already are)."""

    def close(self) -> None:  # noqa: B027 - a no-op by default, on purpose
        """Release files, sockets and locks."""

    def __enter__(self) -> "_Closable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class VectorStore(_Closable):
    """Dense search over L0 units, always confined to one scope."""

    @abstractmethod
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id (replaying the same record changes nothing)."""

    @abstractmethod
    def search(
        self,
        scope: Scope,
        vector: np.ndarray,
        limit: int,
        session_ids: Collection[str] | None = None,
        *,
        sessions: bool = True,
    ) -> list[Hit]:
        """Nearest units by cosine similarity, best first; optionally only in ``session_ids``.

        ``sessions=False``: every hit's ``session_id`` is empty. A caller that
        reads the units afterwards (the retriever) learns their sessions there,
        and the store skips reading a payload per hit (about a third of a Qdrant
        Edge query's CPU).
        """

    @abstractmethod
    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        """Remove one session of the scope, or the whole scope."""

    @abstractmethod
    def count(self, scope: Scope | None = None) -> int:
        """Number of records in the scope (or in the whole store when ``scope`` is None)."""

    def count_session(self, scope: Scope, session_id: str) -> int:
        """Records of one session (``memstrata check`` compares it with the L0 units)."""
        raise NotImplementedError(f"{self.name}: count per session")


class LexicalStore(_Closable):
    """BM25 search over L0 units, always confined to one scope."""

    @abstractmethod
    def upsert(self, docs: Sequence[LexicalDoc]) -> None:
        """Insert or replace documents by id."""

    @abstractmethod
    def search(
        self,
        scope: Scope,
        query: str,
        limit: int,
        session_ids: Collection[str] | None = None,
    ) -> list[Hit]:
        """BM25 over the text and keywords fields (English stemming), best first.

        Free text: characters that a query language would treat as syntax are
        taken literally, never raised as errors.
        """

    @abstractmethod
    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        """Remove one session of the scope, or the whole scope."""

    @abstractmethod
    def count(self, scope: Scope | None = None) -> int:
        """Number of documents in the scope (or in the whole store)."""

    def count_session(self, scope: Scope, session_id: str) -> int:
        """Documents of one session (``memstrata check`` compares it with the L0 units)."""
        raise NotImplementedError(f"{self.name}: count per session")


class DocStore(_Closable):
    """Sessions, raw turns, L0 units and cached layers of each scope."""

    # -- sessions and raw turns (L3) --------------------------------------
    @abstractmethod
    def put_session(self, meta: SessionMeta, digest: str | None = None) -> None:
        """Create or replace a session's metadata; ``digest`` fingerprints its content."""

    @abstractmethod
    def get_session(self, scope: Scope, session_id: str) -> SessionMeta | None: ...

    @abstractmethod
    def session_digest(self, scope: Scope, session_id: str) -> str | None:
        """The digest last stored with :meth:`put_session`, if any."""

    @abstractmethod
    def list_sessions(self, scope: Scope) -> list[SessionMeta]:
        """All sessions of the scope, oldest session date first (undated last)."""

    @abstractmethod
    def put_turns(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> None:
        """Insert or replace turns by (session, index)."""

    @abstractmethod
    def get_turns(
        self, scope: Scope, session_id: str, indices: Collection[int] | None = None
    ) -> list[Turn]:
        """Turns of one session in index order (all of them, or only ``indices``)."""

    # -- L0 units ---------------------------------------------------------
    @abstractmethod
    def put_units(self, units: Sequence[L0Unit]) -> None:
        """Insert or replace L0 units by id."""

    @abstractmethod
    def get_units(self, scope: Scope, unit_ids: Collection[str]) -> list[L0Unit]:
        """The units of the scope with these ids (unknown ids are skipped)."""

    @abstractmethod
    def session_units(self, scope: Scope, session_id: str) -> list[L0Unit]:
        """All units of one session in turn order."""

    # -- cached L1/L2 layers ----------------------------------------------
    @abstractmethod
    def get_layer(
        self, scope: Scope, session_id: str, layer: str, builder: str
    ) -> dict[str, Any] | None:
        """A cached layer payload for (scope, session, layer, builder version), if any."""

    @abstractmethod
    def put_layer(
        self, scope: Scope, session_id: str, layer: str, builder: str, payload: dict[str, Any]
    ) -> None:
        """Cache a layer payload (JSON-serialisable), replacing any previous one."""

    # -- housekeeping -----------------------------------------------------
    @abstractmethod
    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        """Remove everything of one session, or of the whole scope."""

    @abstractmethod
    def count_turns(self, scope: Scope | None = None) -> int:
        """Number of stored raw turns in the scope (or in the whole store)."""

    def atomic(self) -> AbstractContextManager[None]:
        """Every write in the block lands, or none of them (one transaction where the
        backend has them; this default: each write on its own)."""
        return nullcontext()

    def session_tallies(self) -> list[SessionTally]:
        """Every stored session with its raw-turn and L0-unit counts (read-only;
        ``memstrata check`` walks them)."""
        raise NotImplementedError(f"{self.name}: session tallies")

    def list_users(self, tenant_id: str, *, after: str | None = None,
                   limit: int = 1000) -> list[str]:
        """One page of the tenant's users (those holding a session), in id order: the
        first ``limit`` ids greater than ``after``; the page's last id asks for the next."""
        raise NotImplementedError(f"{self.name}: list users")

    def iter_users(self, tenant_id: str, *, page: int = 1000) -> Iterator[str]:
        """Every user of the tenant in id order, read ``page`` ids at a time (export and
        retention walk tenants of any size this way)."""
        after: str | None = None
        while True:
            users = self.list_users(tenant_id, after=after, limit=page)
            yield from users
            if len(users) < page:
                return
            after = users[-1]

    def session_layers(self, scope: Scope, session_id: str) -> list[CachedLayer]:
        """Every cached layer payload of one session, whatever its layer and builder
        version, ordered by layer then builder (``memstrata export --layers`` reads them)."""
        raise NotImplementedError(f"{self.name}: session layers")

    def stats(self, tenant_id: str | None = None) -> dict[str, Any]:
        """Counts of one tenant (or of everything): ``users``, ``sessions``, ``turns``,
        ``units`` and ``layers`` (cached payloads by layer name)."""
        raise NotImplementedError(f"{self.name}: stats")

    # -- entity profiles (memstrata.profiles) -----------------------------
    def get_profiles(self, scope: Scope, ids: Collection[str] | None = None
                     ) -> dict[str, dict[str, Any]]:
        """The scope's profile records by id: all of them, or those of ``ids`` (unknown ids
        skipped). A record is an opaque JSON object; a user's records are few and small."""
        raise NotImplementedError(f"{self.name}: profiles")

    def put_profiles(self, scope: Scope, records: Mapping[str, dict[str, Any]], *,
                     drop: Collection[str] = ()) -> None:
        """Insert or replace profile records by id and remove the ids in ``drop``, in one
        write (inside :meth:`atomic`, in the caller's transaction). ``delete`` of a whole
        scope removes its profile records too; ``delete`` of one session leaves them to
        the caller, who rewrites the profiles the session touched."""
        raise NotImplementedError(f"{self.name}: profiles")

    def count_profiles(self, scope: Scope | None = None) -> int:
        """Profile records of the scope (or of the whole store)."""
        raise NotImplementedError(f"{self.name}: profiles")
