"""Which keys are one entity: alias resolution over the relation links.

A pure function of the live keys and links, so the same occurrences give the
same entities whatever order their sessions arrived in, and removing a
session's links splits what they had joined.

* Each name is its own entity, except a name a participant's speaker tag
  carries ("Caroline" is the user in LoCoMo): it joins that participant.
* A relation key ("my sister") joins the one name it is linked to; linked to
  two names ("my sister Inês", later "my sister Ana") it is ambiguous and stays
  an entity of its own, so two sisters never merge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

from memstrata.profiles.model import PARTICIPANTS, Link, is_participant


def neighbours(links: Iterable[Link]) -> dict[str, set[str]]:
    """Both directions of every link (the graph whose components may merge)."""
    out: dict[str, set[str]] = defaultdict(set)
    for link in links:
        out[link.alias].add(link.name)
        out[link.name].add(link.alias)
    return out


def component(start: Collection[str], links: Iterable[Link]) -> set[str]:
    """Every key reachable from ``start`` over links."""
    graph = neighbours(links)
    seen = set(start)
    todo = list(start)
    while todo:
        key = todo.pop()
        for nxt in graph.get(key, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cluster(keys: Collection[str], links: Iterable[Link]) -> dict[str, str]:
    """The entity id of each key (an entity's id is one of its keys)."""
    names_of: dict[str, set[str]] = defaultdict(set)
    for link in links:
        names_of[link.alias].add(link.name)
    speaker_of: dict[str, str] = {}
    for participant in PARTICIPANTS:  # the user first: a name both carry stays the user's
        for name in sorted(names_of.get(participant, ())):
            speaker_of.setdefault(name, participant)
    out: dict[str, str] = {}
    for key in sorted(keys):
        if is_participant(key):
            out[key] = key
        elif key.startswith("name:"):
            out[key] = speaker_of.get(key, key)
    for key in sorted(keys):
        if key in out:
            continue
        linked = names_of.get(key, set())
        if len(linked) == 1 and next(iter(linked)) not in speaker_of:
            out[key] = next(iter(linked))
        else:  # ambiguous, or a participant's own name: "my sister" is never the user
            out[key] = key
    return out
