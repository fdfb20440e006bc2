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

A plan that *matches* (:func:`match_bullets`) reads the named entities' own
bullets by meaning instead of by shared words: "What activities does Melanie
partake in?" shares no word with "went camping" or "took a pottery class", but
the encoder puts them near, and the sessions those bullets came from are the
ones an aggregating question needs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
#: Bullets a match keeps: the named entities' closest to the question.
MATCH_BULLETS = 8
#: A matched session gains this share of the best session score, times its weight squared
#: (chosen on half of LoCoMo dev's conversations: 0.1, 0.25 and 0.5 were tried).
MATCH_BOOST = 0.25
#: A bullet sourced in more sessions than this says who someone is ("also called"), not
#: what they did: it would lift every session alike.
MATCH_MAX_SESSIONS = 3


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
    #: Sessions lifted by the named entities' bullets closest in meaning (a match).
    matched: dict[str, float] = field(default_factory=dict)
    #: The boost the retriever applied to ``matched`` (0 until it does).
    match_boost: float = 0.0

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
        out = {"plan": self.plan.as_json(), "named": self.named, "reached": reached,
               "sessions": {s: round(w, 3) for s, w in top}, "boost": self.boost}
        if self.plan.match:
            best = sorted(self.matched.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
            out["matched"] = {s: round(w, 3) for s, w in best}
            out["match_boost"] = self.match_boost
        return out


def expand(graph: RelationGraph, question: str, plan: RoutePlan) -> Expansion:
    """The sessions the question's entities and their neighbours lend weight to."""
    out = Expansion(plan)
    if not plan.active:
        return out
    out.named = named_entities(graph, question)
    if not out.named or not plan.expand:
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


class BulletVectors:
    """Unit vectors of bullet texts, encoded once (a bounded LRU: profiles change rarely)."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], size: int = 20_000
                 ) -> None:
        self.encode = encode
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # searches run on several threads of a service

    def get(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` unit rows, the ones not seen before encoded in one batch."""
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
        new = [t for t in dict.fromkeys(texts) if t not in found]
        if new:  # encoded outside the lock: two threads may encode the same text, harmlessly
            vecs = np.asarray(self.encode(new), dtype=np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
            found.update(zip(new, vecs))
        with self._lock:
            for t in dict.fromkeys(texts):
                self._cache[t] = found[t]
                self._cache.move_to_end(t)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


def match_bullets(graph: RelationGraph, named: Sequence[str], query: np.ndarray,
                  vectors: BulletVectors, keep: int = MATCH_BULLETS) -> dict[str, float]:
    """Sessions lifted by the named entities' bullets closest to the question in meaning.

    The ``keep`` closest bullets (cosine to ``query``) of the entities in ``named``, each
    sourced in at most :data:`MATCH_MAX_SESSIONS` sessions, give each of their sessions
    their similarity over the best one's; a session's weights add up, and are scaled so
    the best session has 1.
    """
    bullets = [b for e in named if e in graph.nodes for b in graph.nodes[e].bullets
               if 0 < len({s.session_id for s in b.sources}) <= MATCH_MAX_SESSIONS]
    if not bullets:
        return {}
    q = np.asarray(query, dtype=np.float32)
    q = q / (np.linalg.norm(q) + 1e-9)
    sims = vectors.get([b.text for b in bullets]) @ q
    order = np.argsort(-sims, kind="stable")[:keep]
    top = float(sims[order[0]])
    if top <= 0.0:
        return {}
    weights: dict[str, float] = {}
    for i in order.tolist():
        share = max(float(sims[i]), 0.0) / top
        for sid in dict.fromkeys(s.session_id for s in bullets[i].sources):
            weights[sid] = weights.get(sid, 0.0) + share
    best = max(weights.values())
    return {sid: w / best for sid, w in weights.items()}


def _lift(weights: dict[str, float], sessions: Any, w: float) -> None:
    for sid in sessions:
        if w > weights.get(sid, 0.0):
            weights[sid] = w
