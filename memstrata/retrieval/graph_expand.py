"""Multi-hop expansion through the relation graph, before sessions are ranked.

From the entities a question names (:func:`~memstrata.profiles.graph.named_entities`)
the walk reaches their neighbours up to the plan's hops, each hop decayed
(:meth:`~memstrata.profiles.graph.RelationGraph.expand`). Each reached entity
lends its weight to the sessions that are sources of:

* its profile bullets that hold the question's other words ("eat" for "what
  does my sister's cat eat": the cat's ``eats tuna`` bullet), scaled by how
  much of them the bullet holds;
* the edge that reached it (the turn that says Inês has a cat), at half weight.

The retriever adds ``graph_boost`` times its best session score times these
weights to the session scores (:mod:`~memstrata.retrieval.hybrid`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memstrata.profiles.graph import Reach, RelationGraph, named_entities
from memstrata.profiles.model import PARTICIPANTS, fold
from memstrata.route_plan import RoutePlan
from memstrata.text.terms import content_stems

#: The share of its weight a reached entity gives the turn that links it.
LINK_SHARE = 0.5
#: Words that only say "someone" in a chain ("the person who recommended ..."): no term.
_GENERIC = content_stems("person people one someone somebody thing things")
#: Reached entities kept in the trace.
TRACE_ENTITIES = 12


@dataclass
class Expansion:
    """What the walk found: the entities, and the weight it gives each session."""

    plan: RoutePlan
    named: dict[str, str] = field(default_factory=dict)
    reached: list[Reach] = field(default_factory=list)
    sessions: dict[str, float] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    #: The boost the retriever applied (0 until it does).
    boost: float = 0.0

    def as_json(self) -> dict[str, Any]:
        """The trace's view: plan, entities reached (hops, weight, edge) and session weights."""
        reached = []
        for r in self.reached[:TRACE_ENTITIES]:
            item: dict[str, Any] = {"entity": self.names.get(r.entity, r.entity), "id": r.entity,
                                    "hops": r.hops, "weight": round(r.weight, 3)}
            if r.via is not None:
                item["via"] = (f"{self.names.get(r.via.src, r.via.src)} -{r.via.label}-> "
                               f"{self.names.get(r.via.dst, r.via.dst)} ({r.via.type}, "
                               f"{r.via.confidence:.2f})")
            reached.append(item)
        top = sorted(self.sessions.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        return {"plan": self.plan.as_json(), "named": self.named, "reached": reached,
                "sessions": {s: round(w, 3) for s, w in top}, "boost": self.boost}


def expand(graph: RelationGraph, question: str, plan: RoutePlan) -> Expansion:
    """The sessions the question's entities and their neighbours lend weight to."""
    out = Expansion(plan)
    if not plan.expand:
        return out
    out.named = named_entities(graph, question)
    if not out.named:
        return out
    # "my sister" inside "my sister's cat" is the path to the cat, not what is asked of:
    # it lends no bullets, only the turns that link it to the cat.
    phrases = list(out.named.values())
    path = {e for e, p in out.named.items()
            if any(p != ph and fold(p) in fold(ph) for ph in phrases)}
    start = {e: plan.decay if e in path else 1.0 for e in out.named}
    out.reached = graph.expand(start, hops=plan.hops, decay=plan.decay)
    out.names = {r.entity: graph.nodes[r.entity].name for r in out.reached}
    naming = set()
    for phrase in out.named.values():
        naming |= content_stems(phrase)
    asked = content_stems(question) - naming - _GENERIC
    targets = set(out.named) - path
    for e in path:
        for other, edge in graph.neighbours(e):
            if other in targets:
                _lift(out.sessions, (s.session_id for s in edge.sources), LINK_SHARE)
    for r in out.reached:
        # A participant reached over an edge lends nothing: everyone is linked to the user,
        # and what the user says of themselves is not what "my sister's cat" asks.
        if r.entity in path or (r.hops > 0 and r.entity in PARTICIPANTS):
            continue
        node = graph.nodes[r.entity]
        # The edge that reached it is the question's path, not what it asks of the entity.
        wanted = asked - content_stems(r.via.label) if r.via is not None else asked
        if wanted:
            for b in node.bullets:
                held = len(content_stems(b.text) & wanted)
                if held:
                    _lift(out.sessions, (s.session_id for s in b.sources),
                          r.weight * held / len(wanted))
        if r.via is not None:
            _lift(out.sessions, (s.session_id for s in r.via.sources), r.weight * LINK_SHARE)
    return out


def _lift(weights: dict[str, float], sessions: Any, w: float) -> None:
    for sid in sessions:
        if w > weights.get(sid, 0.0):
            weights[sid] = w
