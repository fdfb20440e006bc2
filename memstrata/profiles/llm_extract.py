"""The LLM profile extractor: a session read by the builder model into occurrences.

It returns what the rules of :mod:`memstrata.profiles.extract` return (mentions,
alias links and facts, each with its source turn), so routing, aliases,
storage and deletes are the same whichever read the session. The model's
reply is strict JSON checked by pydantic (:class:`ProfileReply`); a reply that
does not fit, a timeout or any other failure falls back to the rules for that
session, marked (:attr:`Extracted.fallback`, kept in the profile index) and
counted (``memstrata_llm_fallbacks_total{role="builder"}``), like the L0/L1/L2
builds. Calls are booked on the builder role, so they are construction cost.

Caps: one call per session (plus the chat client's one JSON retry), the
session's text clipped to ``MEMSTRATA_L1_MAX_INPUT_CHARS``, the reply to
``MEMSTRATA_LLM_MAX_TOKENS_BUILDER``, at most :data:`MAX_ENTITIES` entities
and :data:`MAX_FACTS` facts kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memstrata.llm.types import LayerBuilder, LLMError
from memstrata.llm.usage import Role, UsageMeter
from memstrata.model import SessionMeta, Turn
from memstrata.profiles.extract import extract_session
from memstrata.profiles.lexicon import PET_SPECIES
from memstrata.profiles.llm_prompt import (
    ATTRIBUTES,
    MAX_ENTITIES,
    MAX_FACTS,
    PROFILE_PROMPT_VERSION,
    profile_messages,
)
from memstrata.profiles.model import (
    PARTICIPANTS,
    RULES_VERSION,
    Fact,
    Link,
    Mention,
    SessionExtract,
    Source,
    fold,
    name_key,
    rel_key,
)

log = logging.getLogger(__name__)

ROLE: Role = "builder"
_Who = Literal["user", "assistant"]
_DATE = r"^\d{4}(-\d{2}(-\d{2})?)?$"


# -- what one session's read gives -------------------------------------------------------
@dataclass(frozen=True)
class Extracted:
    """One session's occurrences and how they were read.

    ``via``: ``rules`` or ``llm``; ``fallback``: why the rules read a session the
    LLM should have (a failure reason), or ``held`` for a stream's open session
    whose LLM read waits for its last window.
    """

    extract: SessionExtract
    via: str = "rules"
    fallback: str | None = None


class SessionExtractor(Protocol):
    """Reads one session into occurrences (the rules, or the LLM with the rules behind it)."""

    @property
    def version(self) -> str: ...

    @property
    def uses_llm(self) -> bool: ...

    def extract(self, meta: SessionMeta, turns: Sequence[Turn]) -> Extracted: ...


class RuleExtractor:
    """The offline extractor: :func:`~memstrata.profiles.extract.extract_session`."""

    version = RULES_VERSION
    uses_llm = False

    def extract(self, meta: SessionMeta, turns: Sequence[Turn]) -> Extracted:
        return Extracted(extract_session(meta, turns))


def content_digest(version: str, meta: SessionMeta, turns: Sequence[Turn]) -> str:
    """What a session's read depends on: extractor version, date and every message."""
    body = {"v": version, "s": meta.session_id,
            "d": meta.session_date.isoformat() if meta.session_date else None,
            "t": [[t.index, [[m.role, m.speaker, m.source_id, m.content] for m in t.messages]]
                  for t in sorted(turns, key=lambda t: t.index)]}
    raw = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


# -- the reply the model must give ---------------------------------------------------------
class EntityOut(BaseModel):
    """One entity as the model names it."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=40)
    name: str | None = Field(None, max_length=80)
    relation: str | None = Field(None, max_length=40)
    of: _Who | None = None
    kind: Literal["person", "pet", "place", "org"]
    gender: Literal["female", "male"] | None = None
    turns: list[int] = Field(min_length=1, max_length=200)

    @field_validator("name", "relation", "of", "gender", mode="before")
    @classmethod
    def _null_words(cls, value: Any) -> Any:
        """``"null"``, ``"none"`` and ``""`` written as text mean no value."""
        if isinstance(value, str) and value.strip().lower() in ("", "null", "none", "n/a"):
            return None
        return value


class FactOut(BaseModel):
    """One attribute value as the model states it."""

    model_config = ConfigDict(extra="ignore")

    about: str = Field(min_length=1, max_length=40)
    attribute: Literal[tuple(ATTRIBUTES)]  # type: ignore[valid-type]
    value: str = Field(min_length=1, max_length=200)
    date: str | None = Field(None, pattern=_DATE)
    turn: int
    said_by: _Who | None = None

    @field_validator("date", "said_by", mode="before")
    @classmethod
    def _null_words(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "null", "none", "n/a"):
            return None
        return value


class ProfileReply(BaseModel):
    """The whole reply; anything that does not fit fails the read (then the rules read it)."""

    model_config = ConfigDict(extra="ignore")

    entities: list[EntityOut] = Field(default_factory=list)
    facts: list[FactOut] = Field(default_factory=list)

    @field_validator("entities", mode="before")
    @classmethod
    def _cut_entities(cls, value: Any) -> Any:
        """More than :data:`MAX_ENTITIES` are cut off (a cap, not an error)."""
        return value[:MAX_ENTITIES] if isinstance(value, list) else value

    @field_validator("facts", mode="before")
    @classmethod
    def _cut_facts(cls, value: Any) -> Any:
        return value[:MAX_FACTS] if isinstance(value, list) else value


# -- the extractor -------------------------------------------------------------------------
class JsonChat(Protocol):
    """What the extractor needs of :class:`~memstrata.llm.openai_compat.ChatClient`."""

    meter: UsageMeter

    def model_for(self, role: Role) -> str: ...

    def complete_json(self, role: Role, messages: Sequence[Mapping[str, Any]],
                      schema_hint: str | None = None) -> dict[str, Any]: ...


class LLMProfileExtractor:
    """The builder model reads each session; the rules read it when the model fails."""

    uses_llm = True

    def __init__(self, client: JsonChat, *, max_input_chars: int = 12000) -> None:
        self.client = client
        self.max_input_chars = max_input_chars

    @property
    def version(self) -> str:
        parts = ["llm", self.client.model_for(ROLE), PROFILE_PROMPT_VERSION]
        if self.max_input_chars != 12000:
            parts.append(f"i{self.max_input_chars}")
        return ":".join(parts)

    def extract(self, meta: SessionMeta, turns: Sequence[Turn]) -> Extracted:
        if not turns:
            return Extracted(SessionExtract(meta.session_id), via="llm")
        try:
            return Extracted(self._read(meta, turns), via="llm")
        except Exception as exc:  # every failure falls back, none stops a write
            if isinstance(exc, LLMError):
                reason = exc.reason
                log.warning("LLM profile read of session %s failed (%s); read it by rules: %s",
                            meta.session_id, reason, exc)
            elif isinstance(exc, ValidationError):
                reason = "unparsable"
                log.warning("LLM profile read of session %s did not fit the schema; read it "
                            "by rules: %s", meta.session_id, exc)
            else:
                reason = "error"
                log.warning("LLM profile read of session %s failed; read it by rules",
                            meta.session_id, exc_info=exc)
            self.client.meter.record_fallback(ROLE, reason)
            return Extracted(extract_session(meta, turns), via="rules", fallback=reason)

    def _read(self, meta: SessionMeta, turns: Sequence[Turn]) -> SessionExtract:
        # Only an LLM builder makes this extractor, and it has the openai package.
        from memstrata.llm.openai_compat import render_turns

        ordered = sorted(turns, key=lambda t: t.index)
        texts = render_turns(ordered, self.max_input_chars)
        blocks = [(t.index, text) for t, text in zip(ordered, texts, strict=True)]
        data = self.client.complete_json(ROLE, profile_messages(meta, blocks, _speakers(ordered)))
        reply = ProfileReply.model_validate(data)
        return occurrences(meta, ordered, reply)


def _speakers(turns: Sequence[Turn]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for t in turns:
        for m in t.messages:
            if m.speaker:
                seen.setdefault(("user" if m.role == "user" else "assistant", m.speaker), None)
    return list(seen)


def occurrences(meta: SessionMeta, turns: Sequence[Turn], reply: ProfileReply) -> SessionExtract:
    """The reply as mentions, links and facts, every one tied to a turn of the session.

    Entities and facts that name a turn the session does not have, or a subject
    the reply does not define, are dropped (the rest of the reply is kept).
    """
    sid = meta.session_id
    said = meta.session_date.date().isoformat() if meta.session_date else None
    out = SessionExtract(sid)
    by_turn = {t.index: t for t in turns}

    def source(turn: int, who: str | None = None) -> Source:
        ids = tuple(m.source_id for m in by_turn[turn].messages if m.source_id
                    and (who is None or ("user" if m.role == "user" else "assistant") == who))
        return Source(sid, turn, ids)

    # The speakers' names are their participants (as the rules read them).
    for who, name in _speakers(turns):
        first = next(t.index for t in turns for m in t.messages if m.speaker == name)
        key = name_key(name)
        out.links.append(Link(who, key, source(first, who)))
        out.mentions.append(Mention(key, name, source(first, who), kind=who))

    keys: dict[str, str] = {p: p for p in PARTICIPANTS}
    for e in reply.entities:
        turns_of = sorted({n for n in e.turns if n in by_turn})
        nkey = name_key(e.name) if e.name and fold(e.name) else None
        relation = fold(e.relation) if e.relation else ""
        rkey = rel_key(e.of, relation) if e.of and relation else None
        own = nkey or rkey
        if own is None or not turns_of or e.id in keys:
            continue
        keys[e.id] = own
        species = relation if e.kind == "pet" and relation in PET_SPECIES else None
        if nkey and rkey:
            out.links.append(Link(rkey, nkey, source(turns_of[0])))
        for n in turns_of:
            src = source(n)
            if nkey and e.name:
                out.mentions.append(Mention(nkey, e.name, src, e.kind, e.gender, species))
            if rkey:
                form = f"my {relation}" if e.of == "user" else f"the assistant's {relation}"
                out.mentions.append(Mention(rkey, form, src, e.kind, e.gender, species))

    for f in reply.facts:
        subject = keys.get(f.about)
        if subject is None or f.turn not in by_turn:
            continue
        by: str = f.said_by or _first_role(by_turn[f.turn])
        value = " ".join(f.value.split())
        said_here: list[tuple[str, str, str]] = []  # (subject key, slot, value)
        if f.attribute in ("likes", "dislikes"):
            said_here.append((subject, f"pref:{fold(value)}", f"{f.attribute} {value}"))
        elif f.attribute == "eats":
            said_here.append((subject, f"eats:{fold(value)}", f"eats {value}"))
        elif f.attribute in ("looks_after", "recommended"):
            target = keys.get(value)
            if target is None or target == subject:
                continue
            inverse = "cared_for_by" if f.attribute == "looks_after" else "recommended_by"
            said_here += [(subject, f.attribute, f"@{target}"), (target, inverse, f"@{subject}")]
        else:
            said_here.append((subject, f.attribute, value))
        src = source(f.turn, by)
        out.facts += [Fact(key, slot, text, src, by, f.date or said, said)
                      for key, slot, text in said_here]
    return out


def _first_role(turn: Turn) -> str:
    return "user" if any(m.role == "user" for m in turn.messages) else "assistant"


def profile_extractor(builder: LayerBuilder, max_input_chars: int = 12000) -> SessionExtractor:
    """The LLM extractor when ``builder`` builds with an LLM (L0/L1/L2), else the rules.

    The same switch as the layers (``MEMSTRATA_LLM_BACKEND``): the LLM builder's chat
    client (its model, caps, breaker and usage meter) serves the profile role too.
    """
    primary = getattr(builder, "primary", builder)
    client = getattr(primary, "client", None)
    if client is not None and callable(getattr(client, "complete_json", None)):
        return LLMProfileExtractor(client, max_input_chars=max_input_chars)
    return RuleExtractor()
