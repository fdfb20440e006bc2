"""What the profile rules extract from a session, and how it is stored.

Everything a session contributes is an *occurrence* tagged with its source
turn: a :class:`Mention` (a surface form that names something), a
:class:`Link` (a relation phrase tying "my sister" to "Inês") and a
:class:`Fact` (one attribute value of one subject). Profiles are built from
occurrences only, so removing a session is removing its occurrences, and the
result does not depend on the order sessions arrived in.

Subjects are named by *keys*, never by display text: ``user`` and
``assistant`` (the two participants), ``name:<folded name>`` and
``rel:<owner>:<relation>`` ("my sister" said by the user is
``rel:user:sister``). :mod:`memstrata.profiles.resolve` groups keys into
entities.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from memstrata.memo import memo
from typing import Any, Literal

Kind = Literal["user", "assistant", "person", "pet", "place", "org"]
Section = Literal["identity", "attributes", "preferences", "events", "plans"]
SECTIONS: tuple[Section, ...] = ("identity", "attributes", "preferences", "events", "plans")
PARTICIPANTS: tuple[str, str] = ("user", "assistant")
#: The kinds an entity profile is kept and listed for (participants included).
PROFILED_KINDS: frozenset[str] = frozenset({"user", "assistant", "person", "pet", "place", "org"})
#: The id of the per-user index record among the profile records (no entity key starts with '#').
INDEX_ID = "#index"
#: Bumped when the extraction rules change what they produce (stored with the index).
RULES_VERSION = "profiles-rules-1"


@memo(65536)
def fold(text: str) -> str:
    """Lower case without accents or extra spaces: "Inês" and "Ines" are one name."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def name_key(name: str) -> str:
    return f"name:{fold(name)}"


def rel_key(owner: str, relation: str) -> str:
    return f"rel:{owner}:{fold(relation)}"


def is_participant(key: str) -> bool:
    return key in PARTICIPANTS


@dataclass(frozen=True, slots=True)
class Source:
    """One turn an occurrence came from: session, turn index and the raw message ids."""

    session_id: str
    turn: int
    message_ids: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"s": self.session_id, "t": self.turn}
        if self.message_ids:
            out["m"] = list(self.message_ids)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Source":
        return cls(str(data["s"]), int(data["t"]), tuple(data.get("m") or ()))

    def label(self) -> str:
        """``session#turn`` plus the message ids, as bullets cite it."""
        base = f"{self.session_id}#{self.turn}"
        return f"{base} ({', '.join(self.message_ids)})" if self.message_ids else base

    def sort_key(self) -> tuple[str, int]:
        return (self.session_id, self.turn)


@dataclass(frozen=True, slots=True)
class Mention:
    """A surface form naming the thing behind ``key`` (with what the context says of it)."""

    key: str
    form: str
    source: Source
    kind: str | None = None
    gender: str | None = None
    species: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.key, "f": self.form, "src": self.source.as_json()}
        for name, value in (("kind", self.kind), ("g", self.gender), ("sp", self.species)):
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Mention":
        return cls(d["k"], d["f"], Source.from_json(d["src"]), d.get("kind"), d.get("g"),
                   d.get("sp"))


@dataclass(frozen=True, slots=True)
class Link:
    """``alias`` (a relation key or a participant) and ``name`` are one entity, per this turn."""

    alias: str
    name: str
    source: Source

    def as_json(self) -> dict[str, Any]:
        return {"a": self.alias, "n": self.name, "src": self.source.as_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Link":
        return cls(d["a"], d["n"], Source.from_json(d["src"]))


@dataclass(frozen=True, slots=True)
class Fact:
    """One value of one attribute (``slot``) of the subject ``key``, from one turn.

    ``date`` is when it holds or happened (ISO, as precise as the text: ``2024``,
    ``2024-01``, ``2024-01-05``); ``said`` is the session's date; ``by`` is the
    participant who said it.
    """

    key: str
    slot: str
    value: str
    source: Source
    by: str
    date: str | None = None
    said: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.key, "slot": self.slot, "v": self.value,
                               "src": self.source.as_json(), "by": self.by}
        if self.date is not None:
            out["d"] = self.date
        if self.said is not None:
            out["said"] = self.said
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Fact":
        return cls(d["k"], d["slot"], d["v"], Source.from_json(d["src"]), d["by"], d.get("d"),
                   d.get("said"))

    def order(self) -> tuple[str, str, str, int, str]:
        """Chronological order of facts: when it holds, when it was said, then where."""
        return (self.date or self.said or "", self.said or "", self.source.session_id,
                self.source.turn, self.value)


@dataclass
class SessionExtract:
    """Every occurrence one session contributes (a pure function of its turns)."""

    session_id: str
    mentions: list[Mention] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)

    def keys(self) -> set[str]:
        """Every key this session says something about."""
        out = {m.key for m in self.mentions} | {f.key for f in self.facts}
        for link in self.links:
            out |= {link.alias, link.name}
        return out
