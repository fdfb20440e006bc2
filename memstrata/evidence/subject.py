"""Is a line about what the question asks about?

A value of the right kind is still no answer when it is about something else:
"How old is my sister?" is not answered by "my dog is a three-year-old
beagle". The question's subject is read as its entities (names that are not
the conversation's participants: "Lisbon", "Max") and its other content words
("sister", "trip", "stapler"), less the words that only name the kind of
answer ("old", "job", "days"). A line is about the subject when it, or a line
of a neighbouring turn (the question a reply answers often names the thing the
reply gives a value for), holds one of the entities, or, when the question
names none, one of its words; a name the evidence gives a relation counts as
the relation ("my sister Inês").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memstrata.evidence import lexical
from memstrata.evidence.cues import Cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.type_lexicon import SUBJECT_SYNONYMS
from memstrata.text import vocab
from memstrata.text.lexicon import FILLER

#: What the question says of its subject in general terms, or the placeholder speakers.
_NOT_SUBJECT = frozenset(lexical.stem(w) for w in (
    *vocab.TIME_WORDS, *lexical.QUESTION_WORDS, *FILLER, *(m.lower() for m in vocab.MONTHS),
    *vocab.SEASONS, "user", "assistant", "i", "you", "now", "currently", "current", "usually",
    "still", "these", "days", "total", "altogether", "sometime", "sometimes", "again", "once",
    "recently", "lately", "ever", "today"))
#: A line's neighbourhood: the turns this close to its own in the same session (a reply
#: gives the value, the question before it names the thing).
NEAR_TURNS = 1


@dataclass(frozen=True)
class Subject:
    """What a question is about: the stems of the things it names (``entities``: "Lisbon",
    "Max") and of its other content words ("sister", "trip", "stapler").

    An attribute question of the form "my sister's car" also has a ``head`` (the
    thing whose attribute is asked: "car"; "sister" for "my sister's job") and
    its ``owners`` ("sister").
    """

    entities: frozenset[str]
    words: frozenset[str]
    head: str | None = None
    owners: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.entities or self.words)

    @property
    def stems(self) -> frozenset[str]:
        return self.entities | self.words


def subject_of(cues: Cues, skip: Iterable[str] = ()) -> Subject:
    """The question's entities and content words, less ``skip`` (the answer kind's words),
    the participants, time words and words that say nothing of a topic ("do", "get")."""
    drop = set(skip) | _NOT_SUBJECT | {lexical.stem(p.split()[0]) for p in cues.participants
                                       if p.split()}
    firsts = {p.split()[0].lower() for p in cues.participants if p.split()}
    entities: set[str] = set()
    for name in lexical.names(cues.question):
        first = name.split()[0].lower()
        # "Mel" for Melanie: a participant by a short form of the name.
        if first in firsts or (len(first) >= 3 and any(f.startswith(first) for f in firsts)):
            continue
        entities |= {lexical.stem(w) for w in name.split() if not w.isdigit()}
    entities -= drop
    words = {t for t in cues.terms if t not in drop and t not in entities and not t.isdigit()}
    # An attribute of a possessed thing ("how old is my sister's dog") is asked only by
    # the typed questions; elsewhere "Melanie's hand-painted bowl" has no single head.
    head, owners = _possessed(cues.question, set(skip)) if (
        cues.expects is not None and cues.expects.kind in ATTRIBUTE_KINDS) \
        else (None, frozenset())
    return Subject(frozenset(entities), frozenset(words), head, owners - drop)


#: Kinds that are attributes of one thing or person ("my sister's age"), whose owner must
#: be the line's subject, not a thing it owns ("my sister's dog is five").
ATTRIBUTE_KINDS = frozenset({"age", "occupation", "colour", "measure"})
_OWNED = re.compile(r"\b(?:my|your|his|her|our|their|[A-Z][\w\-]*['’]s)\s+"
                    r"((?:[^\W\d_]+['’]s\s+)*)((?:[^\W\d_]+\s+){0,2}?[^\W\d_]+)"
                    r"(?=\s*(?:[?.,!]|$|\s(?:is|are|was|were|do|does|did|has|have|had|of|in|at|"
                    r"on|for|with|to|now|these|this|that|weigh|weighs)\b))")


def _possessed(question: str, kind_words: set[str]) -> tuple[str | None, frozenset[str]]:
    """("car", {"sister"}) for "my sister's car"; ("sister", {}) for "my sister's job" (the
    job is the kind asked for) and "how old is my sister"."""
    m = _OWNED.search(question)
    if m is None:
        return None, frozenset()
    chain = [lexical.stem(w) for w in re.findall(r"([^\W\d_]+)['’]s", m.group(1))]
    noun = m.group(2).split()[-1]
    last = lexical.stem(noun)
    if last in kind_words or lexical.is_stop(noun):
        if not chain:
            return None, frozenset()
        last, chain = chain[-1], chain[:-1]
    return last, frozenset(chain)


def _family(stem: str) -> frozenset[str]:
    return _FAMILIES.get(stem, frozenset({stem}))


_FAMILIES: dict[str, frozenset[str]] = {}
for _group in SUBJECT_SYNONYMS:
    _stems = frozenset(lexical.stem(w) for w in _group)
    for _s in _stems:
        _FAMILIES[_s] = _FAMILIES.get(_s, frozenset()) | _stems
_WORD_OWNER = re.compile(r"\b([^\W\d_]+)(['’]s\b)?")


class Neighbourhood:
    """The stems of each line together with the other lines read from the same turn."""

    def __init__(self, lines: Sequence[EvidenceLine], relations: Iterable[str] = ()) -> None:
        from memstrata.evidence.relevance import line_terms

        self._terms = line_terms
        self._by_turn: dict[tuple[str, int], set[str]] = {}
        for ln in lines:
            stems = line_terms(ln)
            for t in ln.turn_indices:
                self._by_turn.setdefault((ln.session_id, t), set()).update(stems)
        wanted = set(relations)
        #: Stem of a name -> the relation the evidence gives it ("inê" -> "sister").
        self.aliases: dict[str, str] = {}
        if wanted:
            for ln in lines:
                for rel, name in lexical.kin(ln.text):
                    if rel in wanted:
                        self.aliases.setdefault(lexical.stem(name), rel)

    def near(self, line: EvidenceLine) -> set[str]:
        """The line's stems, its neighbouring turns', and the relations the names in them
        stand for."""
        have = set(self._terms(line))
        for t in {t + d for t in line.turn_indices for d in range(-NEAR_TURNS, NEAR_TURNS + 1)}:
            have |= self._by_turn.get((line.session_id, t), set())
        have |= {rel for key, rel in self.aliases.items() if key in have}
        return have | {s for t in have if t in _FAMILIES for s in _FAMILIES[t]}

    def about(self, subject: Subject, line: EvidenceLine) -> bool:
        """A thing the question names is near the line ("Lisbon" for "the Lisbon trip");
        a question that names none needs one of its other words there. Asked about
        "my sister's car", the car and the sister must be near, and a line that names
        the sister only as an owner ("my sister's dog is five") is not about her."""
        if not subject:
            return True
        have = self.near(line)
        if subject.head is not None:
            if not (_family(subject.head) & have):
                return False
            if any(not (_family(o) & have) for o in subject.owners):
                return False
            if self._only_owner(subject.head, line.text):
                return False
        return bool((subject.entities or subject.words) & have)

    def _only_owner(self, head: str, text: str) -> bool:
        """Does ``text`` name ``head`` only as the owner of something else?"""
        family = _family(head)
        plain = owner = 0
        for m in _WORD_OWNER.finditer(text):
            stem = lexical.stem(m.group(1))
            if stem in family or self.aliases.get(stem) in family:
                if m.group(2):
                    owner += 1
                else:
                    plain += 1
        return owner > 0 and plain == 0
