"""The reader's profile reads over a user's stored profiles (local memory and the CLI).

:class:`~memstrata.memory.Memory` answers ``profile`` and ``entities`` with
these, and ``memstrata profile`` runs them over a read-only doc store, so
both give the records the gRPC client rebuilds from the wire.
"""

from __future__ import annotations

from typing import Any, Protocol

from memstrata.contract import QueryError
from memstrata.model import Scope
from memstrata.profile_records import (
    MAX_ENTITY_CHARS,
    EntityProfile,
    EntitySummary,
    ProfileNotFound,
    profile_from_view,
    summary_from_view,
)

__all__ = ["all_profiles", "check_entity", "entity_list", "profiles_named"]


class ProfileLookup(Protocol):
    """What the reads need of :class:`~memstrata.profiles.book.ProfileBook`."""

    def views(self, scope: Scope, *, everything: bool = False) -> list[dict[str, Any]]: ...

    def find(self, scope: Scope, query: str) -> list[dict[str, Any]]: ...

    def key_names(self, scope: Scope) -> dict[str, str]: ...


def check_entity(entity: str) -> str:
    """``entity`` if a profile read takes it, else :class:`QueryError` naming the limit."""
    if not entity.strip():
        raise QueryError("entity: required (empty)")
    if len(entity) > MAX_ENTITY_CHARS:
        raise QueryError(f"entity: {len(entity)} characters, limit is {MAX_ENTITY_CHARS}")
    return entity


def profiles_named(book: ProfileLookup, scope: Scope, entity: str) -> list[EntityProfile]:
    """Every profile ``entity`` names (by id, name, alias, relation or "me"); none:
    :class:`ProfileNotFound` naming it."""
    views = book.find(scope, check_entity(entity))
    if not views:
        raise ProfileNotFound(f"entity: no profile named {entity!r} for user {scope.user_id!r}")
    names = book.key_names(scope)
    return [profile_from_view(v, names) for v in views]


def entity_list(book: ProfileLookup, scope: Scope, *,
                everything: bool = False) -> list[EntitySummary]:
    """The user's entities, participants first then by name (``everything``: names of
    unknown kind too); an unknown user has none."""
    views = book.views(scope, everything=everything)
    names = book.key_names(scope) if views else {}
    return [summary_from_view(v, names) for v in views]


def all_profiles(book: ProfileLookup, scope: Scope, *,
                 everything: bool = False) -> list[EntityProfile]:
    """Every listed entity's whole profile, in :func:`entity_list`'s order (one read of the
    records: what a remote controller's ``read_profile`` needs in one call)."""
    views = book.views(scope, everything=everything)
    names = book.key_names(scope) if views else {}
    return [profile_from_view(v, names) for v in views]
