"""What a profile read returns, free of any engine: the reader's records and its error.

:meth:`~memstrata.roles.MemoryReader.profile` and ``entities`` return these,
whether the reader is the local memory (built from the stored views of
:mod:`memstrata.profiles`) or the gRPC client (built from the wire), so a
caller cannot tell the two apart and the congruence tests compare them field
by field. Only pydantic is imported: the light client uses this module.

A value may name another entity by key, as ``@<key>`` alone or after
``" of "`` ("sister of @user", "recommended by @name:ines" is stored as
``@name:ines``); each record carries ``names``, the display name of every key
its text mentions, so it can be shown without another read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["MAX_ENTITY_CHARS", "EntityProfile", "EntitySummary", "ProfileBullet",
           "ProfileNotFound", "ProfileSource", "mentioned_keys", "names_for",
           "profile_from_view", "summary_from_view", "summary_view"]

#: The longest ``entity`` a profile read takes (a name, alias or relation phrase).
MAX_ENTITY_CHARS = 200


class ProfileNotFound(KeyError):
    """No entity of the user goes by that name, alias or relation."""


class ProfileSource(BaseModel):
    """One turn a bullet came from: session, turn index and the raw message ids."""

    session_id: str
    turn: int
    message_ids: list[str] = Field(default_factory=list)


class ProfileBullet(BaseModel):
    """One statement of a profile with every turn it came from (and what it superseded)."""

    slot: str
    value: str
    since: str | None = None
    #: In a history entry: when the value stopped holding.
    until: str | None = None
    #: How the newest fact was routed (``ADD``, ``UPDATE``); None in history entries.
    op: str | None = None
    sources: list[ProfileSource] = Field(default_factory=list)
    #: Older values this one superseded, oldest first, each with both dates.
    history: list[ProfileBullet] = Field(default_factory=list)


class EntitySummary(BaseModel):
    """One entity as ``ListEntities`` lists it."""

    entity_id: str
    kind: str | None = None
    name: str
    relations: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)
    #: Display name of every key its text mentions (``@user`` -> "Maya").
    names: dict[str, str] = Field(default_factory=dict)


class EntityProfile(EntitySummary):
    """One entity's profile: its sections of bullets, each with its sources."""

    gender: str | None = None
    species: str | None = None
    #: Section name (identity, attributes, preferences, events, plans) -> bullets, in order.
    sections: dict[str, list[ProfileBullet]] = Field(default_factory=dict)
    #: Routed facts of the entity: ADD, UPDATE and IGNORE counts.
    ops: dict[str, int] = Field(default_factory=dict)

    def as_view(self) -> dict[str, Any]:
        """The stored view's shape (what :mod:`memstrata.profiles.markdown` renders and the
        controller's ``read_profile`` reads); an empty date is left out."""
        view: dict[str, Any] = {
            "id": self.entity_id, "kind": self.kind, "name": self.name,
            "relation": list(self.relations), "aliases": list(self.aliases),
            "sections": {k: [_bullet_view(b) for b in v] for k, v in self.sections.items()},
            "ops": dict(self.ops)}
        if self.gender:
            view["gender"] = self.gender
        if self.species:
            view["species"] = self.species
        return view


def summary_view(summary: EntitySummary) -> dict[str, Any]:
    """A listed entity in the stored view's shape (for the entities table)."""
    return {"id": summary.entity_id, "kind": summary.kind, "name": summary.name,
            "relation": list(summary.relations), "aliases": list(summary.aliases)}


def _bullet_view(b: ProfileBullet) -> dict[str, Any]:
    out: dict[str, Any] = {"slot": b.slot, "value": b.value}
    if b.since is not None:
        out["since"] = b.since
    if b.until is not None:
        out["until"] = b.until
    if b.op is not None:
        out["op"] = b.op
    out["sources"] = [{"s": s.session_id, "t": s.turn, **({"m": s.message_ids}
                                                          if s.message_ids else {})}
                      for s in b.sources]
    if b.history:
        out["history"] = [_bullet_view(h) for h in b.history]
    return out


def _text(value: Any) -> str | None:
    """A stored optional text as a record holds it: empty and missing are both None."""
    return str(value) if value not in (None, "") else None


def _bullet(d: Mapping[str, Any], slot: str) -> ProfileBullet:
    return ProfileBullet(
        slot=str(d.get("slot") or slot), value=str(d.get("value", "")),
        since=_text(d.get("since")), until=_text(d.get("until")), op=_text(d.get("op")),
        sources=[ProfileSource(session_id=str(s["s"]), turn=int(s["t"]),
                               message_ids=[str(m) for m in s.get("m") or ()])
                 for s in d.get("sources", ())],
        history=[_bullet(h, str(d.get("slot") or slot)) for h in d.get("history", ())])


def mentioned_keys(texts: Iterable[str]) -> set[str]:
    """The entity keys texts refer to: ``@key`` alone, or ``... of @key``."""
    out: set[str] = set()
    for text in texts:
        if text.startswith("@"):
            out.add(text[1:])
            continue
        _, sep, key = text.rpartition(" of @")
        if sep:
            out.add(key)
    return out


def _texts(view: Mapping[str, Any]) -> Iterable[str]:
    yield str(view.get("name", ""))
    yield from (str(r) for r in view.get("relation", ()))
    for bullets in view.get("sections", {}).values():
        for b in bullets:
            yield str(b.get("value", ""))
            yield from (str(h.get("value", "")) for h in b.get("history", ()))


def names_for(views: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> dict[str, str]:
    """The part of a user's key -> name table that these views mention."""
    keys = mentioned_keys(t for v in views for t in _texts(v))
    return {k: names[k] for k in sorted(keys) if k in names}


def summary_from_view(view: Mapping[str, Any], names: Mapping[str, str]) -> EntitySummary:
    """A stored profile view as a listed entity (``names``: the user's key -> name)."""
    return EntitySummary(entity_id=str(view["id"]), kind=_text(view.get("kind")),
                         name=str(view.get("name", "")),
                         relations=[str(r) for r in view.get("relation", ())],
                         aliases=[str(a) for a in view.get("aliases", ())],
                         names=names_for([{"name": view.get("name", ""),
                                           "relation": view.get("relation", ())}], names))


def profile_from_view(view: Mapping[str, Any], names: Mapping[str, str]) -> EntityProfile:
    """A stored profile view as the reader's record (``names``: the user's key -> name)."""
    return EntityProfile(
        **summary_from_view(view, {}).model_dump(exclude={"names"}),
        gender=_text(view.get("gender")), species=_text(view.get("species")),
        sections={str(k): [_bullet(b, "") for b in v]
                  for k, v in view.get("sections", {}).items() if v},
        ops={str(k): int(v) for k, v in view.get("ops", {}).items()},
        names=names_for([view], names))
