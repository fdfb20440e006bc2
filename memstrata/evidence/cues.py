"""Rule-based reading of a question: what it asks for and how hard it is to find.

The offline policy plans from these cues the way AdaMem's route planner does
(Appendix B.2): time words call for date interpretation, counting and list
words for a wider net and reflection, compound questions for decomposition,
and exact-detail words for descending to the raw turns. The expected answer
type steers the extractive answer (a date for "when", a number for "how many").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from memstrata.evidence import lexical
from memstrata.evidence.answer_types import Expect, expected
from memstrata.text import vocab
from memstrata.text.dates import find_relative_dates

AnswerType = Literal["date", "duration", "count", "amount", "person", "place", "yesno", "reason",
                     "list", "thing"]

_TEMPORAL = re.compile(
    r"\b(?:when|date|dates|year|years|month|months|time|last|ago|before|after|since|until|"
    r"first|recently|lately|week|weeks|weekend|day|days|yesterday|today|tomorrow|season|"
    r"spring|summer|autumn|fall|winter|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|how\s+long)\b",
    re.IGNORECASE,
)
_COUNTING = re.compile(
    r"\b(?:how\s+many|how\s+much|how\s+often|number\s+of|count|times|total|in\s+total|"
    r"list|all\s+the|every|each)\b",
    re.IGNORECASE,
)
_RELATION = re.compile(
    r"\b(?:why|because|cause|caused|reason|relationship|connect\w*|between|in\s+common|both|"
    r"compare\w*|same|differ\w*|related)\b",
    re.IGNORECASE,
)
_ATTRIBUTE = re.compile(
    r"\b(?:prefer\w*|like|likes|favou?rite|personality|trait\w*|attribute\w*|enjoy\w*|"
    r"interest\w*|hobb(?:y|ies))\b",
    re.IGNORECASE,
)
_EXACT = re.compile(
    r"\b(?:exact|exactly|precisely|name\s+of|named|called|title|brand|colou?r|specific|"
    r"what\s+(?:kind|type|sort)\s+of|which\s+\w+|how\s+much|price|cost|address|number|"
    r"recommend\w*|suggest\w*|say|said|tell|told|quote|word|words)\b|[\"“]",
    re.IGNORECASE,
)
_AUX_START = re.compile(
    r"^(?:am|is|are|was|were|do|does|did|would|could|can|will|has|have|had|should|might|may)\b",
    re.IGNORECASE,
)
_DATE_ASK = re.compile(
    r"^\s*when\b|\b(?:what|which)\s+(?:year|month|date|day|time|season|week)\b"
    r"|\bon\s+what\s+date\b",
    re.IGNORECASE,
)
_DURATION_ASK = re.compile(r"\bhow\s+long\b", re.IGNORECASE)
#: "How much money / did it cost", "what was the price": a sum of money is wanted.
_AMOUNT_ASK = re.compile(
    r"\bhow\s+much\b(?!\s+(?:time|longer|later|earlier))(?:.*\b)?(?:"
    + "|".join(sorted(vocab.MONEY_WORDS)) + r")\b"
    r"|\bhow\s+much\s+(?:did|does|do|was|is|were|will|would)\b.*\b(?:cost|pay|paid|spend|spent|"
    r"charge|earn|make|worth)\b"
    r"|\bwhat\s+(?:was|is|were|are)\s+(?:the|my|our|his|her|their)\s+(?:\w+\s+)?"
    r"(?:budget|price|cost|salary|rent|fee)\b",
    re.IGNORECASE)
_COUNT_ASK = re.compile(r"\b(?:how\s+many|how\s+much|how\s+often|number\s+of)\b", re.IGNORECASE)
_PERSON_ASK = re.compile(r"^\s*(?:who|whom|whose)\b|\bwith\s+whom\b", re.IGNORECASE)
# "Which city", and with up to two modifiers: "which seafood place"; not "what kind of
# place", which asks what the place is like.
_PLACE_ASK = re.compile(
    r"^\s*where\b|\b(?:what|which)\s+"
    r"(?:(?!(?:is|are|was|were|do|does|did|has|have|had|will|would|can|could|kinds?|types?|"
    r"sorts?)\b)[a-z\-]+\s+)"
    r"{0,2}?(?:city|cities|country|state|place|town|location|restaurant|cafe|bar|park|store|shop|"
    r"venue|hotel|museum)\b",
    re.IGNORECASE,
)
#: Place nouns that only say "the answer is a place": the line that answers names the place
#: ("we loved Ramiro") rather than repeating the noun, so they are not terms to cover.
_GENERIC_PLACES = frozenset("place places location locations city cities town towns country "
                            "countries".split())
_REASON_ASK = re.compile(r"^\s*why\b|\bwhat\s+(?:made|caused|inspired|motivated)\b",
                         re.IGNORECASE)
# "What activities ...", "Which books ...": a plural target asks for a list.
_LIST_ASK = re.compile(
    r"^\s*(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?([a-z'\-]+)(?:\s+([a-z'\-]+))?",
    re.IGNORECASE,
)
_NOT_PLURAL = frozenset(
    "is was does has its this his always perhaps whereas yes plus bus gas news series species "
    "us thus less unless christmas".split()
)
_AUX = frozenset("is are was were do does did has have had will would can could should might "
                 "may must".split())
_SPLIT = re.compile(r"\s*(?:;|,?\s+and\s+(?=(?:what|when|where|who|which|how|why|did|does|do|"
                    r"is|was|has)\b)|,?\s+(?:and\s+)?also\s+)\s*", re.IGNORECASE)
# "What is my sister's name?", "What is my sister called?", "Who is Ana's coach?": the
# question asks who the relation is, so the name the evidence gives it is the answer. Only
# relations that name one person: "John's children" are a list, gathered as lists are.
_ONE_PERSON = tuple(r for r in vocab.RELATIONS
                    if r not in ("parents", "siblings", "kids", "children"))
_REL_TARGET = re.compile(
    r"^\s*(?:what|who)(?:'s|\s+(?:is|was|are|were))\s+(?:the\s+names?\s+of\s+)?"
    r"(my|our|his|her|their|[A-Z][\w\-]*'s)\s+(?:(?:" + "|".join(vocab.RELATION_MODIFIERS)
    + r")\s+)?(" + "|".join(_ONE_PERSON) + r")(?:'s\s+(?:first\s+)?names?|\s+called|"
    r"\s+named)?\s*\??\s*$",
    re.IGNORECASE)
_NAME_PAIR = re.compile(r"\b([A-Z][a-z]+)\s+and\s+([A-Z][a-z]+)\b")
_TEMPORAL_LINK = re.compile(r"\s+(?:after|before|since|while|when)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Cues:
    """What a question asks for, as the rule policy sees it."""

    question: str
    answer_type: AnswerType
    temporal: bool = False
    counting: bool = False
    multi_hop: bool = False
    exact_detail: bool = False
    relation: bool = False
    attribute: bool = False
    #: Relative time phrases in the question ("last year"), resolved by interpret_dates.
    relative_dates: tuple[str, ...] = ()
    #: Names in the question ("Caroline", "LGBTQ").
    names: tuple[str, ...] = ()
    #: Content stems of the question (what the evidence should cover).
    terms: tuple[str, ...] = ()
    #: Sub-questions when the question is compound.
    parts: tuple[str, ...] = field(default_factory=tuple)
    #: Conversation participants the question names (whom it is about).
    subjects: tuple[str, ...] = ()
    #: Everyone who talks in the user's conversations (never an answer to "who").
    participants: tuple[str, ...] = ()
    #: (owner, relation stem) when the question asks who a relation is ("my sister's name").
    relation_target: tuple[str, str] | None = None
    #: Stem of a category noun the question asks members of ("languages": C++, Rust).
    category: str | None = None
    #: The name in "Who is Inês?": the answer is who she is to someone.
    who_is: str | None = None
    #: The question is about what the assistant said ("What did you recommend?").
    asks_assistant: bool = False
    #: The finer kind of answer asked for ("how many days": a number of days), if known.
    expects: Expect | None = None

    @property
    def labels(self) -> list[str]:
        """The cues that fired, for the trace."""
        flags = ("temporal", "counting", "multi_hop", "exact_detail", "relation", "attribute")
        return [f for f in flags if getattr(self, f)]

    @property
    def compound(self) -> bool:
        return len(self.parts) > 1


def answer_type(question: str) -> AnswerType:
    q = question.strip()
    if _DURATION_ASK.search(q):
        return "duration"
    if _DATE_ASK.search(q):
        return "date"
    if _AMOUNT_ASK.search(q):
        return "amount"
    if _COUNT_ASK.search(q):
        return "count"
    if _PERSON_ASK.search(q):
        return "person"
    if _PLACE_ASK.search(q):
        return "place"
    if _REASON_ASK.search(q):
        return "reason"
    if _AUX_START.search(q):
        return "yesno"
    m = _LIST_ASK.search(q)
    if m:
        first, second = (m.group(1) or "").lower(), (m.group(2) or "").lower()
        # "What books has ...": a plural noun then a verb; "What hurts after ..." is a verb.
        noun_first = _plural(first) and (second in _AUX or (m.group(2) or "")[:1].isupper())
        if noun_first or (first not in _AUX and _plural(second)):
            return "list"
    return "thing"


def _plural(word: str) -> bool:
    return (len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "'s", "us", "is"))
            and word not in _NOT_PLURAL and word not in _AUX)


def decompose(question: str) -> list[str]:
    """Split a compound question into focused parts (the question itself when it is simple).

    Three shapes are handled: clauses joined by "and"/"also"/";" that each
    ask something; two names joined by "and" ("What do Ana and Ben both
    like?" asks once per person); and an event anchored to another event
    ("What did Ana do after the move?" asks about both events).
    """
    q = " ".join(question.split())
    parts = [p.strip(" ,?") for p in _SPLIT.split(q) if p and len(p.split()) >= 2]
    if len(parts) > 1:
        return [p + "?" for p in parts]
    pair = _NAME_PAIR.search(q)
    if pair:
        a, b = pair.groups()
        body = q.replace(" both", "")
        return [body.replace(pair.group(0), a), body.replace(pair.group(0), b)]
    link = _TEMPORAL_LINK.split(q, maxsplit=1)
    if len(link) == 2 and all(len(p.split()) >= 3 for p in link):
        return [link[0].strip(" ?") + "?", link[1].strip(" ?")]
    return [q]


def detect_cues(question: str, asked_on: object = None,
                participants: Sequence[str] = ()) -> Cues:
    """All cues of ``question``.

    ``asked_on`` (a date) lets relative phrases be recognised; ``participants``
    (who talks in the user's conversations) tells whom the question is about.
    """
    q = question.strip()
    kind = answer_type(q)
    from datetime import date, datetime

    anchor = asked_on if isinstance(asked_on, (date, datetime)) else date(2000, 1, 1)
    rel = tuple(r.phrase for r in find_relative_dates(q, anchor, calendar=False))
    parts = tuple(decompose(q))
    counting = bool(_COUNTING.search(q)) or kind in ("count", "list")
    relation = bool(_RELATION.search(q))
    target = _REL_TARGET.search(q)
    terms = _content_terms(q, kind)
    return Cues(
        question=q,
        answer_type=kind,
        temporal=bool(_TEMPORAL.search(q)) or kind in ("date", "duration") or bool(rel),
        counting=counting,
        multi_hop=len(parts) > 1 or relation or kind == "list",
        exact_detail=bool(_EXACT.search(q)) and kind not in ("yesno", "reason"),
        relation=relation,
        attribute=bool(_ATTRIBUTE.search(q)),
        relative_dates=rel,
        names=lexical.names(q),
        terms=terms,
        parts=parts if len(parts) > 1 else (),
        subjects=tuple(p for p in participants
                       if re.search(rf"\b{re.escape(p.split()[0])}\b", q)),
        participants=tuple(participants),
        relation_target=((target.group(1), lexical.stem(target.group(2).lower()))
                         if target else None),
        who_is=who.group(1) if (who := _WHO_IS.search(q)) else None,
        asks_assistant=bool(_YOU.search(q)),
        expects=expected(q, money=kind == "amount") if kind not in ("yesno", "list") else None,
        # "What are Melanie's pets' names?" wants names, not the kind of pet.
        category=None if _NAMES_ASK.search(q) else next(
            (t for t in terms if t in _CATEGORIES), None),
    )


_WHO_IS = re.compile(r"^\s*(?i:who\s+(?:is|was))\s+([A-Z][^\W\d_][\w'\-]*)\s*\??\s*$")
#: "you" in a question put to the memory of a user's chats is the assistant.
_YOU = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_NAMES_ASK = re.compile(r"\b(?:names?|named|called)\b", re.IGNORECASE)
#: Category nouns by stem ("languag" -> the languages).
_CATEGORIES: dict[str, frozenset[str]] = {
    lexical.stem(k): v for k, v in vocab.CATEGORY_MEMBERS.items()}


def _content_terms(question: str, kind: AnswerType) -> tuple[str, ...]:
    """The question's stems, less the generic place noun a place question asks with."""
    terms = lexical.terms(question)
    m = _PLACE_ASK.search(question) if kind == "place" else None
    noun = m.group(0).split()[-1].lower() if m else ""
    if noun in _GENERIC_PLACES:
        asked = lexical.stem(noun)
        kept = tuple(t for t in terms if t != asked)
        return kept or terms
    return terms


def keyword_query(question: str) -> str:
    """The question reduced to its content words: a second, sharper query for BM25."""
    return " ".join(w for w in lexical.words(question) if not lexical.is_stop(w))
