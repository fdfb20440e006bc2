"""A relation graph between a user's entities, derived from the stored profile views.

Nodes are the profiled entities (the user and the assistant always among
them); edges are typed (``relation``, ``ownership``, ``place``, ``work``,
``event``, ``recommendation``), carry a confidence and the turns they come
from. Nothing of it is stored: the graph is a pure function of the profile
records, so a session's delete or an incremental update (which rewrite the
profiles) changes the graph with them, and an edge whose only sources were in
a deleted session is gone.

Where an edge comes from:

* a relation of a view ("sister of @user", "cat of @name:ines"): ``relation``
  (``ownership`` for a pet);
* a bullet whose value is a key (``recommended @name:ramiro``,
  ``cared_for_by @name:tomasz``): by its slot;
* a bullet whose text names another entity ("a trip to Lisbon with my sister
  Inês"): by its slot, ``place`` when the named entity is a place.

:meth:`RelationGraph.expand` walks the edges from the entities a question
names, up to a number of hops, each hop multiplying the weight by the
edge's confidence and a decay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memstrata.model import Scope
from memstrata.profiles.book import ProfileBook
from memstrata.profiles.model import INDEX_ID, PARTICIPANTS, Source, fold

EdgeType = Literal["relation", "ownership", "place", "work", "event", "recommendation"]
EDGE_TYPES: tuple[EdgeType, ...] = ("relation", "ownership", "place", "work", "event",
                                    "recommendation")
#: How far an edge of each type is trusted when one turn states it (more turns: more).
BASE_CONFIDENCE: dict[str, float] = {"relation": 0.9, "recommendation": 0.9,
                                     "ownership": 0.85, "work": 0.75, "place": 0.7,
                                     "event": 0.6}
#: An edge read from free text (a name inside an event) is less sure than a stated link.
TEXT_FACTOR = 0.8
#: An edge from a superseded value (a former home) counts this much.
HISTORY_FACTOR = 0.8
_SLOT_TYPE: dict[str, EdgeType] = {
    "owns": "ownership", "lives_in": "place", "from": "place", "works_at": "work",
    "works_as": "work", "recommended": "recommendation", "recommended_by": "recommendation",
    "looks_after": "relation", "cared_for_by": "relation",
}
#: Words naming what a bullet's slot is, so "what does X like" meets X's preferences.
_SLOT_WORDS: dict[str, str] = {
    "pref": "likes", "eats": "eats", "favourite": "favourite", "activity": "activity does",
    "owns": "owns has", "lives_in": "lives", "from": "from", "works_as": "works job",
    "works_at": "works", "diet": "diet eats", "age": "age old", "birthday": "birthday",
    "looks_after": "looks after", "cared_for_by": "looked after", "recommended": "recommended",
    "recommended_by": "recommended", "is_a": "is",
}


@dataclass(frozen=True, slots=True)
class Bullet:
    """One profile bullet as the graph reads it: slot, text and the turns it came from."""

    slot: str
    text: str
    sources: tuple[Source, ...]


@dataclass
class Node:
    """One entity: its display name, kind, the forms that name it and its bullets."""

    id: str
    name: str
    kind: str | None
    forms: tuple[str, ...]
    relations: tuple[tuple[str, str], ...]  # (relation word, owner entity id)
    bullets: list[Bullet] = field(default_factory=list)

    def sessions(self) -> set[str]:
        return {s.session_id for b in self.bullets for s in b.sources}


@dataclass(frozen=True, slots=True)
class Edge:
    """``src`` --label--> ``dst`` of one type, with a confidence and its source turns."""

    src: str
    dst: str
    type: EdgeType
    label: str
    confidence: float
    sources: tuple[Source, ...]

    def as_json(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "type": self.type, "label": self.label,
                "confidence": round(self.confidence, 3),
                "sources": [s.as_json() for s in self.sources]}


@dataclass(frozen=True, slots=True)
class Reach:
    """An entity the walk reached: in how many hops, with what weight, over which edge."""

    entity: str
    hops: int
    weight: float
    via: Edge | None = None


class RelationGraph:
    """Entities and typed edges of one user (see the module's docstring)."""

    def __init__(self, nodes: Mapping[str, Node], edges: Sequence[Edge]) -> None:
        self.nodes = dict(nodes)
        self.edges = list(edges)
        self._adj: dict[str, list[Edge]] = {}
        for e in self.edges:
            self._adj.setdefault(e.src, []).append(e)
            self._adj.setdefault(e.dst, []).append(e)

    def neighbours(self, entity: str) -> list[tuple[str, Edge]]:
        """Both directions: an edge is walked either way."""
        return [(e.dst if e.src == entity else e.src, e) for e in self._adj.get(entity, ())]

    def expand(self, start: Mapping[str, float], *, hops: int = 2, decay: float = 0.5,
               min_weight: float = 0.05) -> list[Reach]:
        """Every entity within ``hops`` of ``start`` with its best weight (start: hop 0).

        A hop multiplies the weight by the edge's confidence and ``decay``. The two
        participants are hubs (everyone is linked to the user): reached, they are
        not walked through, else every question would reach everything.
        """
        best: dict[str, Reach] = {e: Reach(e, 0, w) for e, w in start.items() if e in self.nodes}
        frontier = list(best)
        for hop in range(1, hops + 1):
            nxt: list[str] = []
            for entity in frontier:
                if entity in PARTICIPANTS and best[entity].hops > 0:
                    continue
                here = best[entity].weight
                for other, edge in self.neighbours(entity):
                    w = here * edge.confidence * decay
                    if w < min_weight:
                        continue
                    seen = best.get(other)
                    if seen is None or w > seen.weight:
                        best[other] = Reach(other, hop if seen is None else min(hop, seen.hops),
                                            w, edge)
                        nxt.append(other)
            frontier = nxt
        return sorted(best.values(), key=lambda r: (r.hops, -r.weight, r.entity))


def load_graph(book: ProfileBook, scope: Scope) -> RelationGraph:
    """The graph of one user's stored profiles (read through the book's doc store)."""
    records = book.docs.get_profiles(scope)
    index = records.get(INDEX_ID) or {}
    keymap: dict[str, str] = dict(index.get("keys", {}))
    views = [r["view"] for eid, r in records.items() if eid != INDEX_ID and r.get("view")]
    return build_graph(views, keymap)


def build_graph(views: Iterable[Mapping[str, Any]], keymap: Mapping[str, str]) -> RelationGraph:
    """Nodes and edges of these profile views (``keymap``: which entity each key is)."""
    nodes: dict[str, Node] = {}
    for v in views:
        nodes[v["id"]] = _node(v, keymap)
    for p in PARTICIPANTS:
        nodes.setdefault(p, Node(p, f"the {p}", p, (), ()))

    def entity(key: str) -> str | None:
        eid = keymap.get(key, key)
        return eid if eid in nodes else None

    # One edge per (src, dst, type): "cat of @user" and "owns a cat named Sardinha" are one.
    edges: dict[tuple[str, str, EdgeType], list[tuple[float, str, tuple[Source, ...]]]] = {}

    def add(src: str | None, dst: str | None, kind: EdgeType, label: str, factor: float,
            sources: tuple[Source, ...]) -> None:
        if src is None or dst is None or src == dst or not sources:
            return
        edges.setdefault((src, dst, kind), []).append((factor, label, sources))

    finders = _finders(nodes)
    for v in views:
        me = v["id"]
        kind = v.get("kind")
        for b in v.get("sections", {}).get("identity", []):
            if b["slot"] == "relation" and " of @" in b["value"]:
                word, owner = b["value"].split(" of @", 1)
                add(entity(owner), me, "ownership" if kind == "pet" else "relation", word, 1.0,
                    _sources(b))
        for b in _all_bullets(v):
            slot, value = b["slot"], str(b["value"])
            if slot in ("relation", "aliases", "species"):
                continue
            base = slot.split(":", 1)[0]
            factor = HISTORY_FACTOR if b.get("_history") else 1.0
            refs = [value[1:]] if value.startswith("@") else []
            for ref in refs:
                other = entity(ref)
                etype = _SLOT_TYPE.get(base, "relation")
                label = base.replace("_", " ")
                if base in ("recommended_by", "cared_for_by"):  # one edge, stated once
                    src, dst = other, me
                    label = "recommended" if base == "recommended_by" else "looks after"
                else:
                    src, dst = me, other
                add(src, dst, etype, label, factor, _sources(b))
            if refs:
                continue
            for other in _named_in(value, finders, me):
                etype = _SLOT_TYPE.get(base) or (
                    "place" if nodes[other].kind == "place" else "event")
                add(me, other, etype, base.replace("_", " "), factor * TEXT_FACTOR, _sources(b))
    out = []
    for (src, dst, kind), found in sorted(edges.items()):
        sources = tuple(sorted({s for _, _, group in found for s in group}, key=Source.sort_key))
        # The surest statement names it; of those, the shortest label ("cat" over "owns").
        factor, label = max(((f, lb) for f, lb, _ in found),
                            key=lambda x: (x[0], -len(x[1]), x[1]))
        out.append(Edge(src, dst, kind, label, _confidence(kind, factor, sources), sources))
    return RelationGraph(nodes, out)


def _confidence(kind: str, factor: float, sources: Sequence[Source]) -> float:
    """Base confidence of the type, raised by each further turn that states it."""
    one = BASE_CONFIDENCE[kind] * factor
    turns = len({(s.session_id, s.turn) for s in sources})
    return min(0.99, 1.0 - (1.0 - one) ** turns)


def _sources(bullet: Mapping[str, Any]) -> tuple[Source, ...]:
    return tuple(Source.from_json(s) for s in bullet.get("sources", ()))


def _all_bullets(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every bullet of a view, former values included (marked ``_history``)."""
    out: list[dict[str, Any]] = []
    for bullets in view.get("sections", {}).values():
        for b in bullets:
            out.append(b)
            for h in b.get("history", ()):
                out.append({"slot": b["slot"], "value": h["value"],
                            "sources": h.get("sources", ()), "_history": True})
    return out


def _node(view: Mapping[str, Any], keymap: Mapping[str, str]) -> Node:
    relations = []
    for r in view.get("relation", ()):
        if " of @" in r:
            word, owner = r.split(" of @", 1)
            relations.append((fold(word), keymap.get(owner, owner)))
    forms = {fold(view.get("name", ""))} | {fold(a) for a in view.get("aliases", ())}
    forms = {f for f in forms if len(f) >= 3 and not f.startswith(("the user", "the assistant"))
             and " of @" not in f}
    bullets = []
    for b in _all_bullets(view):
        if b["slot"] in ("relation", "species"):
            continue
        base = b["slot"].split(":", 1)[0]
        text = b["value"] if base in ("event", "plan", "aliases") else (
            f"{_SLOT_WORDS.get(base, base)} {b['value']}")
        if str(b["value"]).startswith("@"):  # a reference: the slot's words say what it is
            text = _SLOT_WORDS.get(base, base)
        bullets.append(Bullet(b["slot"], text, _sources(b)))
    return Node(view["id"], str(view.get("name", view["id"])), view.get("kind"),
                tuple(sorted(forms)), tuple(relations), bullets)


def _finders(nodes: Mapping[str, Node]) -> list[tuple[re.Pattern[str], str]]:
    """One word-bounded pattern per named entity (its folded name and aliases)."""
    out = []
    for n in nodes.values():
        names = [f for f in n.forms if not f.startswith(("my ", "our ", "your ", "his ", "her "))]
        if names:
            alt = "|".join(re.escape(f) for f in sorted(names, key=len, reverse=True))
            out.append((re.compile(rf"\b(?:{alt})\b"), n.id))
    return out


def _named_in(text: str, finders: Sequence[tuple[re.Pattern[str], str]], me: str) -> list[str]:
    folded = fold(text)
    return sorted({eid for pattern, eid in finders if eid != me and pattern.search(folded)})


_POSSESSIVE = {"user": ("my", "our"), "assistant": ("your",)}


def named_entities(graph: RelationGraph, question: str) -> dict[str, str]:
    """The entities ``question`` names, each with the phrase that named it.

    By name or alias ("Inês", "Cervejaria Ramiro"), and by relation to an owner
    the question names: "my sister" (the user's), "your friend" (the
    assistant's), "Inês's cat", "my sister's cat" (the owner named by an alias).
    """
    q = fold(question)
    found: dict[str, str] = {}
    for pattern, eid in _finders(graph.nodes):
        m = pattern.search(q)
        if m:
            found.setdefault(eid, m.group(0))
    for node in graph.nodes.values():
        for word, owner in node.relations:
            owner_node = graph.nodes.get(owner)
            heads = list(_POSSESSIVE.get(owner, ()))
            if owner_node is not None:
                heads += [f"{re.escape(f)}'s" for f in owner_node.forms]
            if not heads:
                continue
            stem = re.escape(word[:-1] if word.endswith("s") and len(word) > 3 else word)
            m = re.search(rf"\b(?:{'|'.join(heads)})\s+{stem}s?\b", q)
            if m:
                found.setdefault(node.id, m.group(0))
    return found
