"""The two roles every entry point sees memory through: reading and writing.

:class:`MemoryReader` is all the controller and the query service need to
answer a question; :class:`MemoryWriter` is all the stream worker and the
batch ingester need to record conversations. :class:`~memstrata.memory.Memory`
implements both over local stores; the gRPC client implements the reader over
the network, so a controller cannot tell a local memory from a remote one.
:class:`ServedMemory` is both over one set of stores, what the query service
runs on. :class:`HostedMemory` adds what a host process (the query service,
the stream worker, the Ray workers' hooks, ``memstrata check``) may use of a
local memory beyond the roles: its settings and usage meter, its stores for
checking, and the seams plugins hook into (the layer executor and a read
hook), so no host reaches into a memory's attributes. The layer seam itself is
here too: a :class:`LayerRequest` carries everything one L1/L2 build needs, and a
:class:`LayerExecutor` (in-process by default, :mod:`memstrata.layers.executor`;
Ray in ``workers``) builds it. The other executor seam, answering questions, is
the controller's and lives in :mod:`memstrata.executor`. What the roles return
and raise beyond the domain model (answers, ``SessionNotFound``,
``QueryError``) is in :mod:`memstrata.contract`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memstrata.contract import DataDirLocked, QueryError, SessionNotFound
from memstrata.profile_records import EntityProfile, EntitySummary, ProfileNotFound
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
)

if TYPE_CHECKING:  # annotations only: the client imports this module and no engine
    from memstrata.config import Settings
    from memstrata.embed.types import Embedder
    from memstrata.llm.types import Built, LayerBuilder
    from memstrata.llm.usage import UsageMeter
    from memstrata.redact.redactor import Redactor
    from memstrata.retrieval.graph_expand import Expansion
    from memstrata.route_plan import RoutePlan
    from memstrata.store.types import DocStore, LexicalStore, VectorStore

__all__ = [
    "AppendReport",
    "DataDirLocked",
    "DeleteReceipt",
    "HostedMemory",
    "IngestReport",
    "LayerExecutor",
    "LayerRequest",
    "MemoryReader",
    "MemoryStats",
    "MemoryWriter",
    "ProfileNotFound",
    "QueryError",
    "ServedMemory",
    "SessionNotFound",
    "WarmsUp",
]


@dataclass
class MemoryStats:
    """Counts of one tenant (or of the whole deployment when ``tenant_id`` is None)."""

    tenant_id: str | None
    users: int = 0
    sessions: int = 0
    turns: int = 0
    units: int = 0
    #: Cached L1/L2 payloads by layer label ("L1", "L2").
    cached_layers: dict[str, int] = field(default_factory=dict)


@dataclass
class AppendReport:
    """What one :meth:`MemoryWriter.append` (or close) call wrote."""

    scope: Scope
    session_id: str
    #: Turns stored or replaced in L3 by this call (new turns and turns that gained messages).
    turns_written: list[int] = field(default_factory=list)
    #: L0 units upserted by this call, by turn index.
    units_written: list[int] = field(default_factory=list)
    #: The subset of ``units_written`` whose window is not complete yet (will be rebuilt).
    provisional: list[int] = field(default_factory=list)
    #: Ids of the units upserted (deterministic: tenant, user, session, L0, turn).
    unit_ids: list[str] = field(default_factory=list)
    #: Messages ignored because the session already had them (same message id).
    duplicates: int = 0
    #: Texts sent to the encoder by this call.
    embedded: int = 0
    #: Turns stored but not indexed yet: their window was held (``append_batch(hold=...)``)
    #: and is built by the session's next write.
    held: list[int] = field(default_factory=list)


@dataclass
class DeleteReceipt:
    """What a delete removed from each store (counts as the stores report them)."""

    scope: Scope
    session_id: str | None
    removed: dict[str, int] = field(default_factory=dict)
    #: True once every store has dropped the data; False means retry finishes the job.
    complete: bool = True
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class IngestReport:
    """What one :meth:`MemoryWriter.ingest` call did (local or through the service)."""

    sessions: int = 0
    turns: int = 0
    units: int = 0
    unchanged: int = 0
    #: Sessions of this call whose records are complete and marked done (an
    #: interrupted ingest redoes the others when run again).
    committed: int = 0
    #: Units the extractive fallback built because the LLM failed; their sessions
    #: are built again by the next ingest.
    fallbacks: int = 0
    seconds: float = 0.0
    users: set[Scope] = field(default_factory=set)
    #: Records written nowhere because the service refused them, each named with why
    #: (through a service: sessions of a tenant the API key may not act for).
    refused: list[str] = field(default_factory=list)

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds if self.seconds > 0 else 0.0


@runtime_checkable
class MemoryReader(Protocol):
    """Read access to memory, always confined to one (tenant, user) scope."""

    def search(self, scope: Scope, queries: str | Sequence[str],
               top_k: int | None = None) -> list[SessionHit]:
        """Rank the user's sessions for one or several queries (fused by max)."""
        ...

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        """All sessions of the user, oldest first."""
        ...

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        """One session's metadata; raises ``SessionNotFound``."""
        ...

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        """L0 units of one session in turn order."""
        ...

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        """L1 key facts (built on first request, then cached)."""
        ...

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        """L2 turn notes (built on first request, then cached)."""
        ...

    def raw(self, scope: Scope, session_id: str,
            turns: Iterable[int] | None = None) -> list[Turn]:
        """L3 verbatim turns: all of them, or only the given indices."""
        ...

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        """Counts for one tenant, or for everything."""
        ...

    def profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        """The profiles ``entity`` names (an id, name, alias, relation such as "my sister",
        or "me"): usually one, two when it names two (two sisters); none raises
        ``ProfileNotFound``."""
        ...

    def entities(self, scope: Scope, *, everything: bool = False) -> list[EntitySummary]:
        """The user's profiled entities (``everything``: names of unknown kind too)."""
        ...

    def entity_profiles(self, scope: Scope, *,
                        everything: bool = False) -> list[EntityProfile]:
        """Every listed entity's whole profile in one read, in :meth:`entities`' order
        (what a controller's ``read_profile`` reads: ``as_view()`` and ``names``)."""
        ...


@runtime_checkable
class GraphSearcher(Protocol):
    """A reader that can also rank through the relation graph (a local memory can; a
    remote reader ranks flat). The controller asks for it by type, not by attribute."""

    def search_expanded(self, scope: Scope, queries: str | Sequence[str],
                        top_k: int | None = None, route: RoutePlan | None = None,
                        ) -> tuple[list[SessionHit], Expansion | None]:
        """:meth:`MemoryReader.search`, expanded as ``route`` says, with what it did."""
        ...


@runtime_checkable
class MemoryWriter(Protocol):
    """Write access: turn-at-a-time appends, whole sessions, closes and deletes."""

    def append(self, meta: SessionMeta, turns: Sequence[Turn]) -> AppendReport:
        """Add or extend turns of a session (by turn index) and index what they touch.

        Only the windows the new turns touch are rebuilt; records are upserted by
        deterministic id, never deleted first; flushing follows the flush policy.
        """
        ...

    def append_messages(self, meta: SessionMeta,
                        messages: Sequence[Message]) -> AppendReport:
        """Add messages in arrival order, grouped into turns as ``group_turns`` does.

        A user message opens a turn; other messages join the session's last turn.
        A message whose ``source_id`` the session already holds changes nothing.
        """
        ...

    def append_batch(self, items: Sequence[tuple[SessionMeta, Sequence[Message]]], *,
                     hold: Collection[tuple[Scope, str]] = ()) -> list[AppendReport]:
        """:meth:`append_messages` for several sessions as one write, one report each.

        What a batch of turn events becomes (the stream worker, the service's
        Ingest): no delete falls between its sessions, and a writer that can
        embeds and upserts them together. Each session appears at most once.
        A writer may leave the incomplete last window of a session in ``hold``
        unbuilt (``AppendReport.held``) until the session's next write.
        """
        ...

    def ingest(self, sessions: Iterable[Session], *,
               progress: Callable[[int], None] | None = None,
               report: IngestReport | None = None) -> IngestReport:
        """Whole sessions, built on the same path as :meth:`append`.

        ``report`` (returned) is updated as sessions are committed, so a caller
        that is interrupted still knows how far the call got.
        """
        ...

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        """The session is finished: build its final windows."""
        ...

    def delete(self, scope: Scope, session_id: str | None = None) -> DeleteReceipt:
        """Forget one session, or everything of one user, in every store."""
        ...

    def flush(self) -> None:
        """Make every write so far visible to searches."""
        ...


@runtime_checkable
class ServedMemory(MemoryReader, MemoryWriter, Protocol):
    """Both roles over one set of stores: what the query service serves.

    The service reads, answers, writes Ingest batches, closes and deletes
    through this and nothing else; besides the two roles it needs the limit it
    checks search queries against before they reach the reader.
    """

    @property
    def max_query_chars(self) -> int:
        """The longest search query :meth:`search` takes (longer ones raise ``QueryError``)."""
        ...


@runtime_checkable
class WarmsUp(Protocol):
    """A reader that can load its query encoder before the first search needs it.

    A local memory can; a remote reader has nothing to load. The controller
    warms such a reader while its LLM path waits on the model.
    """

    def warm_up(self) -> None:
        """Load the query encoder (the first search would otherwise pay for it)."""
        ...


@dataclass(frozen=True)
class LayerRequest:
    """One L1 or L2 build: the cache key's parts, the turns' digest and the input.

    It carries everything a builder needs (session meta and turns), so an
    executor needs no store access; the process that owns the memory writes
    the cache (:class:`~memstrata.layers.lazy.LazyLayers`).
    """

    scope: Scope
    session_id: str
    layer: str
    builder_version: str
    digest: str
    meta: SessionMeta
    turns: tuple[Turn, ...]

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """The single-flight key: the cache key of :class:`LazyLayers`."""
        return (self.scope.tenant_id, self.scope.user_id, self.session_id, self.layer,
                self.builder_version)


@runtime_checkable
class LayerExecutor(Protocol):
    """Builds one layer and hands back its items (``model_dump`` of each bullet).

    Where the build runs is the executor's business: the caller's thread
    (:class:`~memstrata.layers.executor.LocalLayerExecutor`, the default) or a
    worker pool. ``Built.fallback`` says why the extractive fallback built the
    items (the LLM failed); the cache marks such a layer so a later read tries
    the LLM again.
    """

    def build_layer(self, request: LayerRequest) -> Built[dict[str, Any]]:
        ...


class HostedMemory(ServedMemory, WarmsUp, Protocol):
    """A local memory as a host process sees it: the roles, plus what a host may use.

    Implemented by :class:`~memstrata.memory.Memory`. Hosts read its settings
    and usage meter, check its stores, and plug an executor or a read hook into
    its L1/L2 layers through the two registration methods, never by replacing
    its attributes.
    """

    @property
    def settings(self) -> Settings:
        """The settings it was opened with (the entry point's loaded ones)."""
        ...

    @property
    def meter(self) -> UsageMeter:
        """LLM usage of its builder (and of answers that share it)."""
        ...

    @property
    def builder(self) -> LayerBuilder:
        """Builds its L0 windows and L1/L2 layers (its version is in every cache key)."""
        ...

    @property
    def embedder(self) -> Embedder:
        """Encodes its units and queries."""
        ...

    @property
    def redactor(self) -> Redactor:
        """Its redaction step (a service applies it again before publishing a turn)."""
        ...

    @property
    def docs(self) -> DocStore:
        """Raw turns, units, sessions and cached layers (for checks and exports)."""
        ...

    @property
    def vectors(self) -> VectorStore:
        """Dense vectors of the L0 units (for checks)."""
        ...

    @property
    def lexical(self) -> LexicalStore:
        """BM25 over the L0 units (for checks)."""
        ...

    @property
    def session_lexical(self) -> LexicalStore | None:
        """BM25 over whole sessions; None when not kept (for checks)."""
        ...

    def use_layer_executor(self, executor: LayerExecutor) -> LayerExecutor:
        """Run later L1/L2 builds on ``executor`` (same builder); returns the one replaced."""
        ...

    def on_layer_read(self, hook: Callable[[str, bool], None]) -> Callable[[], None]:
        """Call ``hook(layer, from_cache)`` after every L1/L2 read; the result removes it."""
        ...

    def warm_facts(self, scope: Scope, session_id: str) -> bool:
        """Read L1 through the cache as a read does; True when this call built it."""
        ...

    def writes_paused(self) -> AbstractContextManager[None]:
        """Every write waits while the block runs, the stores flushed first (backups)."""
        ...

    def close(self) -> None:
        """Release the stores and the data dir's lock."""
        ...
