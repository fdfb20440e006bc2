"""Reads: search, the layers of a session, counts and profiles; the hosts' seams."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from memstrata.layers.plan import PLAN_LAYER
from memstrata.memory.core import MemoryCore
from memstrata.memory.fingerprint import _FINGERPRINT
from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.profile_reads import all_profiles, entity_list, profiles_named
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.retrieval.graph_expand import Expansion
from memstrata.roles import LayerExecutor, MemoryStats
from memstrata.route_plan import RoutePlan


class MemoryReads(MemoryCore):
    """Searches and reads (the :class:`~memstrata.roles.MemoryReader` role)."""

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
