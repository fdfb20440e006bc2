"""The route plan of one search: whether to expand through the relation graph, and how.

The question's cues (:func:`memstrata.evidence.cues.detect_cues`: relation,
attribute and multi-hop) are computed above this layer and handed in as
flags; one more cue is read here, a *chain*: a possessive of a possessive or
of a relation ("my sister's cat", "Inês's dog", "Melanie's kids") or a
relative clause that names someone by what they did ("the person who
recommended Ramiro"). A question with none of these is ranked as before:
no graph is read and the ranking is unchanged.

When the plan expands, :mod:`memstrata.retrieval.graph_expand` walks the
graph from the entities the question names and lifts the sessions that are
sources of what the reached entities' profiles say about the question.

A plan may also *match* (opt-in, ``MEMSTRATA_CONTROLLER_USE_PROFILE_MATCH``):
the profile bullets of the entities a question names that are closest to it
in meaning ("activities" and "went camping") lift the sessions they came
from, whatever its cues (:func:`memstrata.retrieval.graph_expand.match_bullets`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

#: "'s" followed by a noun ("sister's cat"), or "my/our/your <relation>".
_CHAIN = re.compile(
    r"\b[\w\-]+'s\s+(?!(?:been|got|gone|done|not)\b)[a-z][\w\-]*"
    r"|\b(?:the|a|that)\s+(?:person|one|friend|man|woman|people|guy|someone)\s+(?:who|that)\b"
    r"|\b(?:my|our|your)\s+(?:\w+\s+)?(?:sister|brother|mother|mom|mum|father|dad|wife|"
    r"husband|partner|boyfriend|girlfriend|son|daughter|kids?|children|child|friend|friends|"
    r"neighbou?r|boss|colleague|coworker|cousin|aunt|uncle|grandma|grandmother|grandpa|"
    r"grandfather|niece|nephew|dog|cat|pet|puppy|horse|coach|mentor|teacher|doctor|"
    r"roommate|fianc[eé]e?)s?\b",
    re.IGNORECASE,
)


class CueFlags(Protocol):
    """The cues a plan reads (:class:`memstrata.evidence.cues.Cues` has them)."""

    @property
    def relation(self) -> bool: ...
    @property
    def multi_hop(self) -> bool: ...
    @property
    def attribute(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class RoutePlan:
    """What one search does beyond the flat ranking (recorded in the trace)."""

    expand: bool
    #: The cues that asked for expansion (``relation``, ``multi_hop``, ``attribute``, ``chain``).
    reasons: tuple[str, ...] = ()
    hops: int = 2
    decay: float = 0.5
    #: Switched off by the ``graph`` ablation (``--without graph``): never expands.
    disabled: bool = False
    question: str = field(default="", compare=False)
    #: Lift the sessions of the named entities' bullets closest to the question in meaning.
    match: bool = False

    @classmethod
    def for_question(cls, question: str, cues: CueFlags | None = None, *, enabled: bool = True,
                     hops: int = 2, decay: float = 0.5, match: bool = False) -> "RoutePlan":
        """Expand when a relation, attribute, multi-hop or chain cue fires (and enabled);
        ``match``: also match the named entities' bullets, whatever the cues."""
        reasons = [name for name in ("relation", "multi_hop", "attribute")
                   if cues is not None and getattr(cues, name, False)]
        if _CHAIN.search(question):
            reasons.append("chain")
        return cls(expand=enabled and bool(reasons), reasons=tuple(reasons), hops=hops,
                   decay=decay, disabled=not enabled, question=question, match=match)

    @property
    def active(self) -> bool:
        """Whether the search reads the profiles at all (a walk, a match or both)."""
        return self.expand or self.match

    def as_json(self) -> dict[str, Any]:
        return {"expand": self.expand, "reasons": list(self.reasons), "hops": self.hops,
                "decay": self.decay, "disabled": self.disabled, "match": self.match}
