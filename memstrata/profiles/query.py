"""The right person for each question: a question's target and attribute, read in the profiles.

Rules, no LLM. A question names (or implies) whom it is about, its *target*:

* the user ("I", "me", "my", or the user's speaker name), the assistant ("you");
* a person, pet, place or organisation of the profiles, by name, alias or
  relation ("Inês", "my sister", "my dog");
* nobody, in an open "who" question ("Who eats fish?", "Who recommended X?"):
  the answer is whoever holds the fact.

and an *attribute* (job, age, home, origin, diet, what one eats or likes,
who recommended or looks after something, or the whole persona). The answer
is read from the target's profile bullets, each with the turns it came from;
a target that is known but has no such attribute is "not stated" (an
abstention), so facts about someone else are never passed off as its own.

The profiles come in as their stored views and key names (``ProfileBook``'s,
or a reader's ``entity_profiles`` turned back into views by the controller);
this module depends on no store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memstrata.profiles.lexicon import (
    ACTIVITIES,
    COMPOUND_RELATIONS,
    HOBBY_NOUNS,
    PERSON_RELATIONS,
    PET_SPECIES,
)
from memstrata.profiles.markdown import bullet_text, named
from memstrata.profiles.model import Source, fold
from memstrata.profiles.text import noun_phrase

TargetKind = Literal["user", "assistant", "entity", "open"]


@dataclass(frozen=True)
class Attribute:
    """One kind of thing a question may ask of someone, and the profile slots that hold it."""

    name: str
    ask: re.Pattern[str]
    slots: Callable[[str, str], bool]
    #: Slots read the other way round in an open "who" question about a named thing
    #: ("Who recommended Ramiro?": Ramiro's ``recommended_by``).
    inverse: tuple[str, ...] = ()
    #: What a sentence stating this attribute holds (an age holds a number): how a line
    #: the evidence path found is checked before it may answer for a target.
    evidence: re.Pattern[str] | None = None


def _prefixed(*prefixes: str, exact: Sequence[str] = ()) -> Callable[[str, str], bool]:
    def test(slot: str, value: str) -> bool:
        return slot in exact or slot.startswith(prefixes) if prefixes else slot in exact
    return test


def _likes(slot: str, value: str) -> bool:
    return (slot.startswith(("eats:", "favourite:")) or
            (slot.startswith("pref:") and not fold(value).startswith(("dislikes", "hates"))))


def _eats(slot: str, value: str) -> bool:
    return slot == "diet" or _likes(slot, value)


#: Verbs of the activity lexicon that say nothing by themselves ("keep bouncing between").
_NOT_PASTIME_HEADS = frozenset("keep keeping getting going doing making trying having".split())


def _pastime_word(word: str) -> bool:
    w = word.lower()
    if w in _NOT_PASTIME_HEADS:
        return False
    return w in HOBBY_NOUNS or w in ACTIVITIES or (w.endswith("ing") and len(w) > 5)


def _pastime(slot: str, value: str) -> bool:
    """An activity, or a liking whose object is a pastime ("likes pottery", "likes hiking")."""
    if slot == "activity":
        return True
    if not slot.startswith("pref:") or not fold(value).startswith("likes "):
        return False
    words = value.split()
    return len(words) > 1 and _pastime_word(words[1])


_PERSONA_SLOTS = ("age", "from", "lives_in", "works_as", "works_at", "diet", "is_a", "activity",
                  "owns")


def _persona(slot: str, value: str) -> bool:
    return slot in _PERSONA_SLOTS or _likes(slot, value)


#: Tried in order, the first that matches wins (persona before likes, eating before likes).
ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("persona", re.compile(
        r"\bwhat (?:kind|sort|type) of (?:a )?person\b|"
        r"\bdescribe (?:me|myself|him|her|them)\W*$|\bwhat (?:am i|is \w+|are you) like\W*$",
        re.I), _persona),
    # Answered by the pet profiles related to the target (see :func:`_pets`).
    # Only a question that asks for the pets themselves ("What pets do I have?").
    Attribute("pets", re.compile(
        r"^\s*(?:what|which)\s+(?:pets|animals)\b[^?]*\b(?:have|has|own|owns|keep|keeps)\b|"
        r"^\s*(?:what|which)\b[^?]*\bnames? of\b[^?]*\b(?:pets|animals)\b|"
        r"^\s*(?:what|which)\b[^?]*\b(?:pets|animals)'? names\b|"
        r"^\s*(?:can you )?list\b[^?]*\b(?:pets|animals)\b", re.I),
        lambda slot, value: False),
    Attribute("care", re.compile(
        r"\b(?:look(?:s|ed|ing)? after|take(?:s|n)? care of|taking care of|took care of|"
        r"cares? for|mind(?:s|ed|ing)?|(?:dog|pet|cat|house|baby)[- ]?sit\w*|feed(?:s|ing)?)\b",
        re.I), _prefixed(exact=("looks_after", "cared_for_by")), inverse=("cared_for_by",),
        evidence=re.compile(r"\b(?:look|care|mind|feed|sit|watch|walk)", re.I)),
    Attribute("recommend", re.compile(r"\b(?:recommend\w*|suggest\w*)\b", re.I),
              _prefixed(exact=("recommended", "recommended_by")), inverse=("recommended_by",),
              evidence=re.compile(r"\b(?:recommend|suggest|try|go to)", re.I)),
    Attribute("activities", re.compile(
        r"\b(?:activit(?:y|ies)|hobby|hobbies|pastimes?|for fun|partakes?|partaking|"
        r"free time|spare time|de-?stress\w*|unwind\w*)\b", re.I), _pastime,
        evidence=re.compile(r"\b(?:\w+ing|love|enjoy|class|hobby|fun)\b", re.I)),
    Attribute("job", re.compile(
        r"\b(?:job|jobs|occupation|profession|career|employ\w*|do for (?:a )?living|"
        r"work(?:s|ed|ing)?(?! out)(?: as| at| for)?)\b", re.I),
        _prefixed(exact=("works_as", "works_at")),
        evidence=re.compile(r"\b(?:work|job|employ|profession|career|hired|as an? )", re.I)),
    Attribute("age", re.compile(r"\bhow old\b|\bage\b|\bbirthday\b|\bborn\b", re.I),
              _prefixed(exact=("age", "birthday")),
              evidence=re.compile(r"\d|year-old|years old|\bage\b|birthday|born", re.I)),
    Attribute("origin", re.compile(
        r"\bwhere (?:is|are|am|was|were|do|does|did) [\w' ]{1,30}? (?:from|originally)\b|"
        r"\bhometown\b|\bgrew up\b|\bgrow up\b|\bcome from\b|\bcomes from\b", re.I),
        _prefixed(exact=("from",)),
        evidence=re.compile(r"\b(?:from|grew up|born|hometown)\b", re.I)),
    Attribute("home", re.compile(
        r"\b(?:live|lives|living|lived|move|moved|moving|reside\w*|relocat\w*)\b", re.I),
        _prefixed(exact=("lives_in",)),
        evidence=re.compile(r"\b(?:live|home|moved|move|reside)", re.I)),
    Attribute("diet", re.compile(r"\b(?:diet|vegetarian|vegan|pescatarian|pescetarian)\b", re.I),
              _prefixed(exact=("diet",)),
              evidence=re.compile(r"\b(?:diet|vegetarian|vegan|pescatarian|eat|meat)", re.I)),
    Attribute("eats", re.compile(r"\b(?:eat|eats|eating|ate|food|foods|dish|dishes|meal)\b",
                                 re.I), _eats,
              evidence=re.compile(r"\b(?:eat|ate|food|dish|meal|love|like|favou?rite)", re.I)),
    Attribute("likes", re.compile(
        r"\b(?:like|likes|liked|love|loves|loved|enjoy\w*|favou?rite\w*|prefer\w*)\b", re.I),
        _likes, evidence=re.compile(r"\b(?:like|love|enjoy|favou?rite|prefer|fan of|into)",
                                    re.I)),
)
_BY_NAME = {a.name: a for a in ATTRIBUTES}

#: "Who is my manager?", "What is my sister's name?": the relation's entity, by name.
_WHO_REL = re.compile(
    r"^\s*(?:who(?:'s| is| was| are| were)|what(?:'s| is) the name of|what(?:'s| is))\s+"
    r"((?:my|our) [\w\- ]+?)(?:'s name| called)?(?:\s+(?:at|from|in) \w+)?\s*\??\s*$", re.I)
#: Relation words that name the same tie ("my manager" is "my boss" in the profiles).
_SAME_TIE: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "boss manager supervisor", "wife husband spouse", "mom mum mother mommy",
    "dad father daddy", "kid child", "kids children", "neighbour neighbor",
    "partner boyfriend girlfriend", "colleague coworker co-worker", "doctor gp physician",
    "roommate flatmate housemate"))
_COUNTING = re.compile(r"\bhow (?:many|much|long|often)\b", re.I)
_WH = re.compile(r"^\s*(?:what|which|where|when|who|whom|whose|how|tell me|describe|name|(?:can you )?list)\b",
                 re.I)
_OPEN_WHO = re.compile(r"^\s*(?:who|whom)\b", re.I)
_WHEN = re.compile(r"^\s*(?:when|since when|how long ago)\b", re.I)
_BEFORE = re.compile(r"\b(?:before|previously|used to|originally|formerly|moved from|"
                     r"move from|old (?:home|job|place))\b", re.I)
_NOW = re.compile(r"\b(?:now|currently|current|these days|today|still)\b", re.I)
_FIRST = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.I)
_SECOND = re.compile(r"\b(?:you|your|yours|yourself|you've|you're)\b", re.I)
_WORD = re.compile(r"[^\W_][\w'\-]*")
_STOP = frozenset(
    """a an the of to in on at for by with from and or is are was were be been being do does did
    who whom whose what which where when why how will would could should can may might shall
    has have had i me my mine you your he she him her his hers they them their it its we us our
    this that these those there here now currently still ever also just really kind sort type
    person people someone anyone somebody anybody else going""".split())
#: Relation words a question may name ("my sister", "my dog", "my best friend").
_RELATION_WORDS = frozenset(PERSON_RELATIONS) | PET_SPECIES | frozenset(COMPOUND_RELATIONS)


@dataclass(frozen=True)
class Target:
    """Whom a question is about (``entity_id`` of its profile; None when open or unknown)."""

    kind: TargetKind
    entity_id: str | None
    name: str
    #: How the question named it ("my sister", "Inês", "I").
    said: str = ""


@dataclass(frozen=True)
class Hit:
    """One profile bullet that answers: whose it is, its words, its value, its sources."""

    entity_id: str
    entity_name: str
    slot: str
    text: str
    value: str
    since: str | None
    sources: tuple[Source, ...]
    history: tuple[dict[str, Any], ...] = ()

    def line(self) -> str:
        """ "Inês: eats fish [2024-03-02-trip#3 (2024-03-02-trip#5)]" """
        src = "; ".join(s.label() for s in self.sources[:4])
        return f"{self.entity_name}: {self.text}" + (f" [{src}]" if src else "")


@dataclass
class ProfileAnswer:
    """What the profiles say to a question.

    ``decisive``: the answer is ``answer`` (with ``hits`` as its sources).
    ``abstain``: the target is known and its profile holds no such attribute; the
    evidence path may still answer, but only from a line that names the target and
    states that kind of thing (:meth:`supports`), else the answer is "not stated".
    Otherwise the bullets are context for the evidence path.
    """

    target: Target | None
    attribute: str | None
    hits: list[Hit] = field(default_factory=list)
    answer: str | None = None
    abstain: bool = False
    #: The entities the question named, besides the target (an open question's objects).
    objects: list[Target] = field(default_factory=list)
    why: str = ""
    #: The folded ways the question's target is named (for :meth:`supports`).
    forms: tuple[str, ...] = ()

    @property
    def decisive(self) -> bool:
        return bool(self.answer)

    def supports(self, line: str) -> bool:
        """Whether an evidence line may answer for the target: it names the target and
        says something of the asked attribute's kind."""
        attr = _BY_NAME.get(self.attribute or "")
        text = fold(line)
        named_ = any(_find(text, f) >= 0 for f in self.forms)
        return named_ and (attr is None or attr.evidence is None
                           or attr.evidence.search(line) is not None)

    def render(self) -> str:
        """What the controller (and an LLM) reads: target, attribute, bullets with sources."""
        who = self.target.name if self.target else "(open question)"
        head = f"Profile read: target={who}, attribute={self.attribute or '-'}"
        body = [f"- {h.line()}" for h in self.hits]
        if self.abstain:
            body.append(f"- {who}: no {self.attribute} stated in the profiles (not stated)")
        elif not body:
            body.append("- nothing in the profiles answers this")
        return "\n".join([head, *body])


def attribute_of(question: str) -> Attribute | None:
    """The attribute a question asks about, if it is one the profiles keep."""
    for attr in ATTRIBUTES:
        if attr.ask.search(question):
            return attr
    return None


def wants_profile(question: str) -> bool:
    """Cheap test: does the question ask something a profile may hold?"""
    return (attribute_of(question) is not None or _WHO_REL.search(question) is not None
            or _DEEDS.search(question) is not None)


#: A list question about what someone did or does: "What has Mel painted?", "Which cities
#: has Jon visited?", "What instruments does Tim play?" (a plural noun, or "has"/"have";
#: "What kind of ..." and "What did ..." ask for one thing and are left to the evidence).
_DEEDS = re.compile(
    r"^\s*(?:[Ww]hat|[Ww]hich)\s+(?:(?P<noun>[a-z]+s)\s+(?:has|have|does|do)|(?:has|have))\s+"
    r"(?P<who>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*)?)\s+(?:ever\s+|also\s+|recently\s+)?"
    r"(?P<verb>[a-z]+)\s*\??\s*$")
_IRREGULAR: dict[str, tuple[str, ...]] = {
    "make": ("made",), "buy": ("bought",), "read": (), "see": ("saw", "seen"),
    "take": ("took", "taken"), "eat": ("ate", "eaten"), "write": ("wrote", "written"),
    "draw": ("drew", "drawn"), "sing": ("sang", "sung"), "win": ("won",), "meet": ("met",),
    "give": ("gave", "given"), "build": ("built",), "find": ("found",),
    "bring": ("brought",), "teach": ("taught",), "ride": ("rode", "ridden"),
    "swim": ("swam", "swum"), "run": ("ran",), "fly": ("flew", "flown"), "lose": ("lost",),
    "keep": ("kept",), "grow": ("grew", "grown"), "wear": ("wore", "worn"),
}
_PARTICIPLES = {f: base for base, forms in _IRREGULAR.items() for f in forms}
#: Verbs too general to say what was done ("What has she done?").
_VAGUE_VERBS = frozenset("do did done be been have had has get got gotten go gone went".split())
_OBJECT_HEAD = re.compile(r"^(?:(?:that|this|these|those|another|a|an|the|my|our|his|her|"
                          r"their|some|two|three|a few|a couple of|some more|more|new)\s+)+",
                          re.I)
_OBJECT_TAIL = re.compile(r"\s+(?:last|yesterday|today|recently|this|next|a few|two|with|"
                          r"for|in|at|on|to|from|after|before|and)\b.*$", re.I)


def _verb_forms(verb: str) -> tuple[str, ...]:
    """ "painted" -> paint, paints, painted, painting; "made" -> make, makes, made, making."""
    v = verb.lower()
    if v in _PARTICIPLES:
        bases = [_PARTICIPLES[v]]
    elif v.endswith("ed") and len(v) > 4:
        bases = [v[:-2], v[:-1]]  # "painted" -> paint, "baked" -> bake
    else:
        bases = [v]
    forms = {v}
    for b in bases:
        forms |= {b, b + "s", b + "ed" if not b.endswith("e") else b + "d", *_IRREGULAR.get(b, ())}
        forms.add(b[:-1] + "ing" if b.endswith("e") and not b.endswith("ee") else b + "ing")
    return tuple(sorted(f for f in forms if len(f) > 2))


def _deeds(question: str, target: Target, view: Mapping[str, Any],
           names: Mapping[str, str]) -> ProfileAnswer | None:
    """The objects of the asked verb in the target's events and activities."""
    m = _DEEDS.search(question)
    if m is None or m.group("verb").lower() in _VAGUE_VERBS:
        return None
    forms = _verb_forms(m.group("verb"))
    # The clause's own verb ("painted a horse", "finished reading Dune"), not a word inside
    # it ("finished another painting like our last one").
    pattern = re.compile(r"^(?:(?:" + _LEAD_VERBS + r")\s+)?(?:" + "|".join(map(re.escape, forms))
                         + r")\s+(.+)$", re.I)
    hits, objects = [], []
    for section in ("events", "attributes", "preferences"):
        for b in view.get("sections", {}).get(section, []):
            slot, value = b.get("slot", ""), named(str(b.get("value", "")), names)
            if slot not in ("event", "activity") and not slot.startswith("pref:"):
                continue
            found = pattern.search(value)
            if found is None:
                continue
            phrase = re.split(r"\s[\u2013\u2014-]\s", found.group(1))[0]  # "impact - it is"
            obj = _OBJECT_TAIL.sub("", _OBJECT_HEAD.sub("", noun_phrase(phrase, max_words=6)))
            words = obj.lower().split()
            if not words or words[0] in _PRONOUN_LIKE or words[-1] in _LIGHT_OBJECTS:
                continue
            objects.append(obj)
            hits.append(Hit(view["id"], target.name, slot, bullet_text(b, names), value,
                            b.get("since"),
                            tuple(Source.from_json(s) for s in b.get("sources", ()))))
    if not objects:
        return None
    return ProfileAnswer(target, "deeds", hits, answer=_join(objects),
                         forms=tuple(_forms(view, names)))


_PRONOUN_LIKE = frozenset(
    """it that this them those these one ones something anything everything nothing so some
    myself yourself herself himself out up me you him her us everyone everybody someone too
    together like for as about with very really just also again there here back lot lots
    much many more""".split())
#: Verbs that take the asked one as a gerund: "finished reading Dune".
_LEAD_VERBS = ("finished|started|began|begun|tried|kept|keep|love|loved|enjoy|enjoyed|been|"
               "went|gone|also|just|recently|finally|even")
#: Objects of light-verb phrases, not things done: "made a difference", "took a break".
_LIGHT_OBJECTS = frozenset(
    """difference impact progress sense sure decision choice effort mistake point deal change
    time care place part break chance look step note use fun call sound noise friends""".split())


def _forms(view: Mapping[str, Any], names: Mapping[str, str]) -> list[str]:
    """The folded ways a question may name an entity: name, aliases, "my <relation>"."""
    out = {fold(view.get("name") or "")}
    out |= {fold(a) for a in view.get("aliases", ())}
    for rel in view.get("relation", ()):
        head, _, owner = rel.partition(" of @")
        if owner == "user":
            for word in _ties(fold(head)):
                out.add(f"my {word}")
                out.add(f"our {word}")
        elif owner:
            owner_name = fold(names.get(owner, owner.split(":", 1)[-1]))
            out.add(f"{owner_name}'s {fold(head)}")
            out.add(f"{owner_name}s' {fold(head)}")
    return [f for f in out if len(f) >= 3 and f not in _STOP]


def _find(q: str, form: str) -> int:
    m = re.search(r"(?<![\w])" + re.escape(form) + r"(?:'s|s'|')?(?![\w])", q)
    return m.start() if m else -1


def _named_in(question: str, views: Sequence[Mapping[str, Any]],
              names: Mapping[str, str]) -> list[tuple[int, int, Target]]:
    """Entities the question names: (position, length, target), longest match per place."""
    q = fold(question)
    found: list[tuple[int, int, Target]] = []
    for v in views:
        best: tuple[int, int] | None = None
        for form in _forms(v, names):
            pos = _find(q, form)
            if pos >= 0 and (best is None or len(form) > best[1]):
                best = (pos, len(form))
        if best is None:
            continue
        kind: TargetKind = v["id"] if v["id"] in ("user", "assistant") else "entity"
        found.append((best[0], best[1], Target(kind, v["id"], _display(v, names),
                                               question[best[0]:best[0] + best[1]])))
    # A longer name covering a shorter one wins ("Cervejaria Ramiro" over "Ramiro").
    kept: list[tuple[int, int, Target]] = []
    for pos, n, t in sorted(found, key=lambda x: (-x[1], x[0])):
        if any(p <= pos < p + m for p, m, _ in kept):
            continue
        kept.append((pos, n, t))
    return sorted(kept, key=lambda x: x[0])


def _display(view: Mapping[str, Any], names: Mapping[str, str]) -> str:
    if view["id"] == "user":
        return "you" if view.get("name", "the user") == "the user" else view["name"]
    return named(view.get("name") or view["id"], names)


def _unresolved_relation(question: str) -> str | None:
    """ "my sister" (or "my dog") in the question, whoever it is; None if none."""
    q = fold(question)
    for rel in sorted(_RELATION_WORDS, key=len, reverse=True):
        if re.search(rf"\b(?:my|our) {re.escape(rel)}(?:'s|s)?\b", q):
            return rel
    return None


def _terms(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(fold(text)):
        w = w.removesuffix("'s")
        if w not in _STOP and len(w) > 2:
            out.add(w[:-1] if w.endswith("s") and len(w) > 4 else w)
    return out


def _hits(view: Mapping[str, Any], attr: Attribute, names: Mapping[str, str],
          who: str) -> list[Hit]:
    out = []
    for section in view.get("sections", {}).values():
        for b in section:
            slot, value = b.get("slot", ""), str(b.get("value", ""))
            if slot in ("relation", "aliases", "species") or not attr.slots(slot, value):
                continue
            out.append(Hit(view["id"], who, slot, bullet_text(b, names), named(value, names),
                           b.get("since"), tuple(Source.from_json(s) for s in b.get("sources", ())),
                           tuple(b.get("history", ()))))
    return out


def _pastime_words(h: Hit) -> str:
    """A pastime as a short answer: "running farther to de-stress" -> "running",
    "likes pottery" -> "pottery", "play clarinet" -> "playing clarinet"."""
    words = _value_words(h).split()
    if not words:
        return ""
    first = words[0].lower()
    if first in ("play", "plays", "playing") and len(words) > 1:
        return f"playing {words[1]}"
    if first in HOBBY_NOUNS:
        return words[0]
    kept = []
    for w in words[:3]:
        if w.lower() in _PASTIME_STOP:
            break
        kept.append(w)
    return " ".join(kept) if kept and _pastime_word(first) else ""


_PASTIME_STOP = frozenset(
    """to with in at on for and or because farther further more again a an the my our your his
    her their this that these those it them so really lately yesterday today now together
    about around""".split())


def _value_words(h: Hit) -> str:
    """A bullet's value as an answer: "likes garlic prawns" -> "garlic prawns"."""
    v = h.value
    for prefix in ("likes ", "loves ", "enjoys ", "eats ", "prefers "):
        if v.lower().startswith(prefix):
            return v[len(prefix):]
    return v


def _join(values: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(v for v in values if v))


def read(question: str, views: Sequence[dict[str, Any]], names: Mapping[str, str],
         participants: Sequence[str] = ()) -> ProfileAnswer:
    """Resolve ``question``'s target and attribute in ``views`` and answer from the bullets.

    ``participants``: the conversation's speaker names ("Caroline"); the user's
    profile carries the first speaker's name already, so they only help to tell
    "I" from a named participant.
    """
    attr = attribute_of(question)
    named_ = _named_in(question, views, names)
    by_id = {v["id"]: v for v in views}
    rel = _WHO_REL.search(question)
    if rel is not None:
        found = _who_is(fold(rel.group(1)), views, names)
        if found is not None:
            return found
    if attr is None:
        target = _target(question, named_, by_id, names) if _DEEDS.search(question) else None
        view = by_id.get(target.entity_id or "") if target is not None else None
        deeds = _deeds(question, target, view, names) if target and view else None
        if deeds is not None:
            return deeds
        return ProfileAnswer(None, None, why="no attribute the profiles keep")
    wh = bool(_WH.search(question))
    if _OPEN_WHO.search(question):
        return _open(question, attr, named_, views, by_id, names)
    target = _target(question, named_, by_id, names)
    if target is None:
        return ProfileAnswer(None, attr.name, why="no target in the profiles")
    view = by_id.get(target.entity_id or "")
    if attr.name == "pets":
        return _pets(target, views, names) if wh and not _COUNTING.search(question) else \
            ProfileAnswer(target, "pets", why="not a wh-question on the pets")
    hits = _hits(view, attr, names, target.name) if view else []
    objects = [t for _, _, t in named_ if t.entity_id != target.entity_id]
    forms = tuple(_forms(view, names)) if view else ()
    out = ProfileAnswer(target, attr.name, hits, objects=objects, forms=forms)
    if not wh or _COUNTING.search(question):
        out.why = "not a wh-question on a value: bullets are context"
        return out
    if not hits:
        # Only a third party's profile is trusted to be complete enough to say "not stated":
        # the participants' own words fill whole sessions the rules do not all read.
        if target.kind == "entity" and view is not None and view.get("kind") in ("person", "pet"):
            out.abstain, out.why = True, f"{target.name} has no {attr.name} in the profiles"
        return out
    if attr.name != "persona":
        # Words the question adds ("recommend for seafood", "languages ... at work") must
        # be in the bullets kept, or the bullets answer another question.
        extra = _terms(question) - _terms(target.said) - _terms(
            " ".join(attr.ask.findall(question))) - _GENERIC
        if extra:
            hits = [h for h in hits if extra <= _terms(h.text)]
            out.hits = hits
            if not hits:
                out.why = "the bullets do not say " + ", ".join(sorted(extra))
                return out
    out.answer, out.hits = _compose(question, attr, hits)
    return out


def _target(question: str, named_: Sequence[tuple[int, int, Target]],
            by_id: Mapping[str, dict[str, Any]], names: Mapping[str, str]) -> Target | None:
    """People and pets named come first ("my sister's job"), then "I" / "you", then
    any other thing named ("Where is Cervejaria Ramiro?"): a place in "When did I move to
    Porto?" is what the user did, not whom the question is about."""
    q = fold(question)
    for pos, n, _ in named_:
        # "Melanie's kids", "Audrey's dogs": the question is about the relation, not Melanie;
        # a relation the profiles do not know leaves the target unknown.
        after = q[pos + n:]
        m = re.match(r"(?:'s|s'|')?\s+(?:\w+\s+)?(\w+)", after)
        if m and (m.group(1) in _RELATION_WORDS or m.group(1).rstrip("s") in _RELATION_WORDS
                  or m.group(1).removesuffix("ren") in _RELATION_WORDS) and re.match(
                      r"(?:'s|s'|')", after):
            return None
    people = [t for _, _, t in named_ if t.kind != "entity"
              or (by_id.get(t.entity_id or "") or {}).get("kind") in ("person", "pet")]
    if people:
        return people[0]
    if _unresolved_relation(question):
        return None  # "my sister" whom the profiles do not know
    if _FIRST.search(question) and "user" in by_id:
        return Target("user", "user", _display(by_id["user"], names), "I")
    if _SECOND.search(question) and "assistant" in by_id:
        return Target("assistant", "assistant", "the assistant", "you")
    if named_:
        return named_[0][2]
    return None


#: Words that ask, not restrict ("what does she like to eat": no restriction).
_GENERIC = frozenset("like likes love enjoy eat food thing things name names get got make "
                     "made want wanted think much many most best usually before previously "
                     "used originally formerly first last recently old new city town country "
                     "place state area neighbourhood neighborhood company title position role "
                     "field day days these right ago year years month months week weeks".split())
_DATED = re.compile(r" \((?:since )?[\d-]+\)$")


def _compose(question: str, attr: Attribute, hits: list[Hit]) -> tuple[str, list[Hit]]:
    """The answer's words, and the bullets (or history entries) it rests on."""
    if attr.name == "persona":
        return "; ".join(dict.fromkeys(_DATED.sub("", h.text) for h in hits)), hits
    if attr.name == "activities":
        return _join([_pastime_words(h) for h in hits]), hits
    if attr.name in ("home", "job", "origin", "age", "diet"):
        h = hits[0]
        if _WHEN.search(question):  # "when did I move": when the current value began
            if attr.name != "home":
                return "", []  # when a job began is not when it was said: not the profile's
            return spoken_date(h.since), [h]
        if h.history and _BEFORE.search(question) and not _NOW.search(question):
            old = h.history[-1]
            value = str(old.get("value", ""))
            past = Hit(h.entity_id, h.entity_name, h.slot,
                       f"{h.slot.replace('_', ' ')}: {value} ({old.get('since')} -> "
                       f"{old.get('until')})", value, old.get("since"),
                       tuple(Source.from_json(s) for s in old.get("sources", ())))
            return value, [past]
        return _join([_title(x) for x in hits]), hits
    return _join([_value_words(h) for h in hits]), hits


_AT_PLACE = re.compile(r" (?:in|at|for|with) [A-Z].*$")


def _title(h: Hit) -> str:
    """A job as its title: "physiotherapist in Madrid" -> "physiotherapist" (the place is
    the workplace's or the home's, another attribute)."""
    return _AT_PLACE.sub("", h.value) if h.slot == "works_as" else h.value


_MONTHS = ("January February March April May June July August September October November "
           "December").split()


def spoken_date(iso: str | None) -> str:
    """ "2024-01" -> "January 2024", "2024-03-02" -> "2 March 2024" (as far as it is known)."""
    if not iso:
        return ""
    parts = iso.split("-")
    try:
        if len(parts) == 3:
            return f"{int(parts[2])} {_MONTHS[int(parts[1]) - 1]} {parts[0]}"
        if len(parts) == 2:
            return f"{_MONTHS[int(parts[1]) - 1]} {parts[0]}"
    except (ValueError, IndexError):
        return iso
    return iso


def _open(question: str, attr: Attribute, named_: Sequence[tuple[int, int, Target]],
          views: Sequence[dict[str, Any]], by_id: Mapping[str, dict[str, Any]],
          names: Mapping[str, str]) -> ProfileAnswer:
    """An open "who": the entity holding the fact, about a named thing or matching words."""
    objects = [t for _, _, t in named_]
    hits: list[Hit] = []
    for obj in objects:  # "Who recommended Ramiro?": Ramiro's recommended_by
        view = by_id.get(obj.entity_id or "")
        if view is None:
            continue
        for h in _hits(view, attr, names, obj.name):
            if h.slot in attr.inverse:
                hits.append(h)
    if hits:
        holders = [h.value for h in hits]
        return ProfileAnswer(None, attr.name, hits, answer=_join(_as_person(holders)),
                             objects=list(objects))
    wanted = _terms(question) - _terms(" ".join(attr.ask.findall(question)))
    object_names = {fold(o.name) for o in objects}
    for v in views:
        who = _display(v, names) if v["id"] != "assistant" else "the assistant"
        for h in _hits(v, attr, names, who):
            if h.slot in attr.inverse:
                continue
            value = fold(h.value)
            if object_names and any(n and n in value for n in object_names):
                hits.append(h)
            elif not object_names and wanted and wanted <= _terms(h.value):
                hits.append(h)
    holders = list(dict.fromkeys(h.entity_name for h in hits))
    if not holders:
        return ProfileAnswer(None, attr.name, objects=list(objects), why="nobody holds it")
    return ProfileAnswer(None, attr.name, hits, answer=_join(_as_person(holders)),
                         objects=list(objects))


def _as_person(values: Sequence[str]) -> list[str]:
    return ["the assistant" if fold(v) in ("assistant", "the assistant") else v for v in values]


def _relation_hits(view: Mapping[str, Any], names: Mapping[str, str]) -> list[Hit]:
    who = _display(view, names)
    return [Hit(view["id"], who, "relation", bullet_text(b, names), named(b["value"], names),
                None, tuple(Source.from_json(s) for s in b.get("sources", ())))
            for b in view.get("sections", {}).get("identity", []) if b.get("slot") == "relation"]


def _who_is(form: str, views: Sequence[dict[str, Any]],
            names: Mapping[str, str]) -> ProfileAnswer | None:
    """ "Who is my manager?": the one entity whose relation to the user is that, by name."""
    found = [v for v in views if v["id"] not in ("user", "assistant")
             and form in _forms(v, names) and not (v.get("name") or "").startswith(
                 tuple(w + " " for w in ("my", "our", "My", "Our")))
             and " of @" not in (v.get("name") or "")]
    if len(found) != 1:
        return None
    v = found[0]
    target = Target("entity", v["id"], _display(v, names), form)
    return ProfileAnswer(target, "relation", _relation_hits(v, names), answer=target.name,
                         forms=tuple(_forms(v, names)))


def _pets(target: Target, views: Sequence[dict[str, Any]],
          names: Mapping[str, str]) -> ProfileAnswer:
    """The pets whose relation names the target as their owner ("dog of @user")."""
    owner_names = {fold(target.name), fold(target.entity_id or "")}
    pets = []
    for v in views:
        # A pet known only by its relation ("cat of Melanie") has no name to answer with.
        if v.get("kind") != "pet" or " of @" in (v.get("name") or "") or \
                " of " in _display(v, names):
            continue
        for rel in v.get("relation", ()):
            _, _, owner = rel.partition(" of @")
            if owner == target.entity_id or fold(names.get(owner, owner)) in owner_names:
                pets.append(v)
                break
    hits = [h for v in pets for h in _relation_hits(v, names)]
    if not pets:
        return ProfileAnswer(target, "pets", why="no pet of the target in the profiles")
    return ProfileAnswer(target, "pets", hits, answer=_join([_display(v, names) for v in pets]))


def _ties(relation: str) -> set[str]:
    """The relation and the words that name the same tie."""
    out = {relation}
    for group in _SAME_TIE:
        if relation in group:
            out |= group
    return out
