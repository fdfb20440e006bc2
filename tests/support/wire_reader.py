"""A TEST DOUBLE reader that sends every result through its wire form.

``WireFormReader`` wraps a real :class:`~memstrata.roles.MemoryReader` and
returns, for every call, what a remote reader would rebuild on its side:
``model_dump(mode="json")`` then ``model_validate``. A controller that answers
the same over it as over the local memory needs nothing but the protocol (no
shared objects, no attributes beyond the reader's methods).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter

from memstrata.model import KeyFacts, L0Unit, Scope, SessionHit, SessionMeta, Turn, TurnNotes
from memstrata.profile_records import EntityProfile, EntitySummary
from memstrata.roles import MemoryReader, MemoryStats

T = TypeVar("T")


def _wire(value: Any, adapter: TypeAdapter[T]) -> T:
    # Through a JSON string, as a network hop would carry it.
    return adapter.validate_python(json.loads(json.dumps(adapter.dump_python(value,
                                                                            mode="json"))))


_HITS = TypeAdapter(list[SessionHit])
_METAS = TypeAdapter(list[SessionMeta])
_META = TypeAdapter(SessionMeta)
_UNITS = TypeAdapter(list[L0Unit])
_FACTS = TypeAdapter(KeyFacts)
_NOTES = TypeAdapter(TurnNotes)
_TURNS = TypeAdapter(list[Turn])
_SCOPE = TypeAdapter(Scope)
_PROFILES = TypeAdapter(list[EntityProfile])
_ENTITIES = TypeAdapter(list[EntitySummary])


class WireFormReader:
    """Every argument and result goes through JSON; nothing else of ``inner`` is visible."""

    def __init__(self, inner: MemoryReader) -> None:
        self._inner = inner
        self.calls: list[str] = []

    def _scope(self, scope: Scope) -> Scope:
        return _wire(scope, _SCOPE)

    def search(self, scope: Scope, queries: str | Sequence[str],
               top_k: int | None = None) -> list[SessionHit]:
        self.calls.append("search")
        qs = json.loads(json.dumps(queries if isinstance(queries, str) else list(queries)))
        return _wire(self._inner.search(self._scope(scope), qs, top_k=top_k), _HITS)

    def sessions(self, scope: Scope) -> list[SessionMeta]:
        self.calls.append("sessions")
        return _wire(self._inner.sessions(self._scope(scope)), _METAS)

    def session(self, scope: Scope, session_id: str) -> SessionMeta:
        self.calls.append("session")
        return _wire(self._inner.session(self._scope(scope), session_id), _META)

    def l0(self, scope: Scope, session_id: str) -> list[L0Unit]:
        self.calls.append("l0")
        return _wire(self._inner.l0(self._scope(scope), session_id), _UNITS)

    def facts(self, scope: Scope, session_id: str) -> KeyFacts:
        self.calls.append("facts")
        return _wire(self._inner.facts(self._scope(scope), session_id), _FACTS)

    def notes(self, scope: Scope, session_id: str) -> TurnNotes:
        self.calls.append("notes")
        return _wire(self._inner.notes(self._scope(scope), session_id), _NOTES)

    def raw(self, scope: Scope, session_id: str,
            turns: Iterable[int] | None = None) -> list[Turn]:
        self.calls.append("raw")
        wanted = None if turns is None else sorted(int(t) for t in turns)
        return _wire(self._inner.raw(self._scope(scope), session_id, wanted), _TURNS)

    def stats(self, tenant_id: str | None = None) -> MemoryStats:
        self.calls.append("stats")
        return self._inner.stats(tenant_id)

    def profile(self, scope: Scope, entity: str) -> list[EntityProfile]:
        self.calls.append("profile")
        return _wire(self._inner.profile(self._scope(scope), entity), _PROFILES)

    def entities(self, scope: Scope, *, everything: bool = False) -> list[EntitySummary]:
        self.calls.append("entities")
        return _wire(self._inner.entities(self._scope(scope), everything=everything),
                     _ENTITIES)

    def entity_profiles(self, scope: Scope, *,
                        everything: bool = False) -> list[EntityProfile]:
        self.calls.append("entity_profiles")
        return _wire(self._inner.entity_profiles(self._scope(scope), everything=everything),
                     _PROFILES)
