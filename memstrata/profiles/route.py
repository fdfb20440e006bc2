"""AdaMem's routers: each fact about an entity is ADD, UPDATE or IGNORE against its profile.

Facts of one attribute (``slot``) are taken in chronological order (when it
holds, when it was said, then session and turn, see :meth:`Fact.order`):

* a single-valued slot (lives_in, works_as, age, diet, a preference about one
  thing...) keeps a timeline: the first value is an ADD, a different value an
  UPDATE that closes the previous one (kept as history with both dates), the
  same value again an IGNORE that only adds its source;
* a multi-valued slot (owns, events, plans, recommendations...) keeps one
  entry per distinct value: ADD when new, IGNORE when repeated.

Routing a fact into a profile in date order gives the same profile as routing
all of them at once, so a profile updated session by session equals one
rebuilt from every session, and removing a session's facts is routing the
others again (only for the slots it touched).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memstrata.profiles.model import (
    SECTIONS,
    Fact,
    Mention,
    Section,
    Source,
    fold,
    is_participant,
)

_SINGLE = frozenset({"age", "lives_in", "from", "works_as", "works_at", "diet", "birthday"})
_SINGLE_PREFIXES = ("pref:", "eats:", "favourite:")
_SECTION_OF: dict[str, Section] = {
    "recommended_by": "identity",
    "age": "attributes", "lives_in": "attributes", "from": "attributes",
    "works_as": "attributes", "works_at": "attributes", "diet": "attributes",
    "birthday": "attributes", "is_a": "attributes", "owns": "attributes",
    "activity": "attributes", "looks_after": "attributes", "cared_for_by": "attributes",
    "event": "events", "recommended": "events", "plan": "plans",
}
LABELS: dict[str, str] = {
    "age": "age", "lives_in": "lives in", "from": "from", "works_as": "works as",
    "works_at": "works at", "diet": "diet", "birthday": "birthday", "is_a": "is",
    "owns": "owns", "activity": "does", "looks_after": "looks after",
    "cared_for_by": "looked after by", "recommended_by": "recommended by",
    "recommended": "recommended", "event": "", "plan": "",
}
_KIND_ORDER = ("person", "pet", "org", "place")


def single_valued(slot: str) -> bool:
    return slot in _SINGLE or slot.startswith(_SINGLE_PREFIXES)


def section_of(slot: str) -> Section:
    if slot.startswith(_SINGLE_PREFIXES):
        return "preferences"
    return _SECTION_OF.get(slot, "attributes")


def _sources(facts: Iterable[Fact]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, int, tuple[str, ...]], Source] = {}
    for f in facts:
        seen.setdefault((f.source.session_id, f.source.turn, f.source.message_ids), f.source)
    return [s.as_json() for s in sorted(seen.values(), key=Source.sort_key)]


@dataclass
class Routed:
    """One slot after routing: its bullets and the op each fact got."""

    bullets: list[dict[str, Any]]
    ops: Counter[str]


def route_slot(slot: str, facts: Sequence[Fact]) -> Routed:
    """The bullets of one slot, its facts routed in chronological order."""
    ordered = sorted(facts, key=Fact.order)
    ops: Counter[str] = Counter()
    if single_valued(slot):
        runs: list[list[Fact]] = []
        for f in ordered:
            if runs and fold(runs[-1][-1].value) == fold(f.value):
                runs[-1].append(f)
                ops["IGNORE"] += 1
            else:
                ops["UPDATE" if runs else "ADD"] += 1
                runs.append([f])
        history = []
        for run, nxt in zip(runs, runs[1:]):
            history.append({"value": run[-1].value, "since": _when(run[0]),
                            "until": _when(nxt[0]), "sources": _sources(run)})
        last = runs[-1]
        bullet = {"slot": slot, "value": last[-1].value, "since": _when(last[0]),
                  "op": "UPDATE" if history else "ADD", "sources": _sources(last)}
        if history:
            bullet["history"] = history
        return Routed([bullet], ops)
    groups: dict[str, list[Fact]] = {}
    for f in ordered:
        group = groups.setdefault(fold(f.value), [])
        ops["IGNORE" if group else "ADD"] += 1
        group.append(f)
    bullets = [{"slot": slot, "value": group[-1].value, "since": _when(group[0]),
                "op": "ADD", "sources": _sources(group)} for group in groups.values()]
    return Routed(bullets, ops)


def _when(f: Fact) -> str | None:
    return f.date or f.said


def _vote(values: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in values if v)
    if not counts:
        return None
    best = max(counts.values())
    return sorted(k for k, n in counts.items() if n == best)[0]


def _name(entity_id: str, keys: Sequence[str], mentions: Sequence[Mention]) -> str:
    """The display name: the participant's speaker name, else the commonest form of its name."""
    if is_participant(entity_id):
        tagged = [m.form for m in mentions if m.kind == entity_id]
        return _commonest(tagged) or f"the {entity_id}"
    forms = [m.form for m in mentions if m.key.startswith("name:")]
    if forms:
        return _commonest(forms)
    return relation_phrase(entity_id)


def _commonest(forms: Sequence[str]) -> str:
    if not forms:
        return ""
    counts = Counter(forms)
    return sorted(counts, key=lambda f: (-counts[f], -len(f), f))[0]


def relation_phrase(key: str) -> str:
    """ "rel:user:sister" -> "sister of @user" (the owner is a key, named when rendered)."""
    _, rest = key.split(":", 1)
    owner, relation = rest.rsplit(":", 1)
    return f"{relation} of @{owner}"


def _kind(entity_id: str, keys: Sequence[str], mentions: Sequence[Mention],
          facts: Sequence[Fact]) -> str | None:
    if is_participant(entity_id):
        return entity_id
    votes = Counter(m.kind for m in mentions if m.kind in _KIND_ORDER)
    if votes:
        best = max(votes.values())
        return next(k for k in _KIND_ORDER if votes.get(k) == best)
    if any(f.slot.split(":")[0] in ("pref", "eats", "plan", "event", "works_as", "works_at",
                                    "lives_in", "age", "diet", "looks_after") for f in facts):
        return "person"
    return None


def build_view(entity_id: str, keys: Sequence[str], mentions: Sequence[Mention],
               facts: Sequence[Fact]) -> dict[str, Any]:
    """The profile of one entity: identity, sections of routed bullets, op counts."""
    kind = _kind(entity_id, keys, mentions, facts)
    relations = sorted({relation_phrase(k) for k in keys if k.startswith("rel:")})
    aliases = _aliases(m.form for m in mentions)
    identity: list[dict[str, Any]] = []
    for rel in relations:
        rel_mentions = [m for m in mentions if m.key.startswith("rel:")
                        and relation_phrase(m.key) == rel]
        identity.append({"slot": "relation", "value": rel,
                         "sources": _mention_sources(rel_mentions)})
    if aliases:
        identity.append({"slot": "aliases", "value": ", ".join(aliases),
                         "sources": _mention_sources(mentions)})
    species = _vote(m.species for m in mentions)
    if species:
        identity.append({"slot": "species", "value": species,
                         "sources": _mention_sources([m for m in mentions if m.species])})
    gender = _vote(m.gender for m in mentions)
    sections: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    sections["identity"] = identity
    ops: Counter[str] = Counter()
    by_slot: dict[str, list[Fact]] = defaultdict(list)
    for f in facts:
        by_slot[f.slot].append(f)
    for slot in sorted(by_slot, key=lambda s: (section_of(s), _slot_rank(s), s)):
        routed = route_slot(slot, by_slot[slot])
        ops.update(routed.ops)
        sections[section_of(slot)].extend(routed.bullets)
    for name in ("events", "plans"):
        sections[name].sort(key=lambda b: (b.get("since") or "", b["value"]))
    view: dict[str, Any] = {
        "id": entity_id, "kind": kind, "name": _name(entity_id, keys, mentions),
        "relation": relations, "aliases": aliases,
        "sections": {k: v for k, v in sections.items() if v},
        "ops": dict(sorted(ops.items())),
    }
    if gender:
        view["gender"] = gender
    if species:
        view["species"] = species
    return view


def _aliases(forms: Iterable[str]) -> list[str]:
    """Distinct forms, one per spelling that differs only in case ("My kids", "my kids")."""
    by_fold: dict[str, str] = {}
    for form in sorted(set(forms)):
        key = fold(form)
        if key not in by_fold or form.islower():
            by_fold[key] = form
    return [by_fold[k] for k in sorted(by_fold)]


def _slot_rank(slot: str) -> int:
    order = ("recommended_by", "age", "from", "lives_in", "works_as", "works_at", "diet",
             "is_a", "activity", "owns", "looks_after", "cared_for_by", "favourite:", "pref:",
             "eats:")
    for i, name in enumerate(order):
        if slot == name or (name.endswith(":") and slot.startswith(name)):
            return i
    return len(order)


def _mention_sources(mentions: Iterable[Mention]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, int, tuple[str, ...]], Source] = {}
    for m in mentions:
        if m.source.session_id:
            seen.setdefault((m.source.session_id, m.source.turn, m.source.message_ids),
                            m.source)
    return [s.as_json() for s in sorted(seen.values(), key=Source.sort_key)]
