"""How well a line of evidence answers the question, and when there is enough.

Both policies and the extractive notes rank evidence lines the same way:
the question's content words, weighted by how rare they are among the lines
read (a speaker's name on every line counts for little), found in the line,
plus a bonus when the line holds the kind of thing asked for (a date for
"when", a number for "how many", a name for "who"). Sufficiency is the same
score seen from the question's side: is there a line that covers most of it?
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from memstrata.memo import memo

from memstrata.evidence import answer_types, lexical
from memstrata.evidence.cues import Cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.type_lexicon import SUBJECT_SYNONYMS
from memstrata.text import vocab

#: A line scoring this much covers the question well enough to answer from.
SUFFICIENT = 0.6
_MON = "|".join(m[:3].lower() for m in vocab.MONTHS)
_DATE_MARK = re.compile(
    r"\(\s*(?:around\s+)?(?:the\s+week(?:end)?\s+of\s+)?\d{4}(?:-\d{2}){0,2}\s*\)"
    r"|\b(?:19|20)\d\d\b"
    rf"|\b(?:{_MON})[a-z]*\.?\s+\d{{1,2}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MON})"
    r"|\b(?:yesterday|last\s+\w+|\w+\s+ago|this\s+(?:week|weekend|month|year|morning)|today"
    r"|tomorrow|next\s+\w+|on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b",
    re.IGNORECASE,
)
_SINCE = re.compile(r"\bsince\b", re.IGNORECASE)
_LAYER_BONUS = 0.015  # finer layers are more faithful: a small tie-breaker


def has_date(text: str) -> bool:
    return _DATE_MARK.search(text) is not None


def type_match(cues: Cues, line: EvidenceLine) -> bool:
    """Does the line hold the kind of thing the question asks for?"""
    kind = cues.answer_type
    text = line.text
    if cues.expects is not None:  # "how many days": a number of days, not any number
        return answer_types.holds(cues.expects, text)
    if kind == "date":
        return has_date(text)
    if kind == "duration":
        return vocab.DURATION.search(text) is not None or _SINCE.search(text) is not None
    if kind == "count":
        return vocab.COUNT.search(text) is not None
    if kind == "amount":
        return vocab.AMOUNT.search(text) is not None
    if kind == "person":
        asked = {n.lower() for n in cues.names}
        return any(n.lower() not in asked for n in lexical.names(text))
    return True


@dataclass(frozen=True, slots=True)
class Scored:
    line: EvidenceLine
    score: float
    coverage: float
    typed: bool


_CAPTION = re.compile(r"^\[|\bshares? (?:a|an) (?:photo|picture|image)\b", re.IGNORECASE)
_SUBJECT_BONUS = 0.1
_CAPTION_PENALTY = 0.1
_NOVELTY_BONUS = 0.1
_QUESTION_PENALTY = 0.15
#: What the assistant said is advice or an echo, not a fact about the user.
_ASSISTANT_PENALTY = 0.1
#: The speaker name of an assistant message (``Message.who``).
ASSISTANT = "Assistant"
_MONEY_STEMS = frozenset(lexical.stem(w) for w in vocab.MONEY_WORDS)
_SYNONYMS: dict[str, frozenset[str]] = {}
for _family in (*vocab.SYNONYMS, *SUBJECT_SYNONYMS):
    _stems = frozenset(lexical.stem(w) for w in _family)
    for _s in _stems:
        _SYNONYMS[_s] = _SYNONYMS.get(_s, frozenset()) | _stems
_CATEGORY_MEMBERS: dict[str, frozenset[str]] = {
    lexical.stem(k): v for k, v in vocab.CATEGORY_MEMBERS.items()}
_TOKEN = re.compile(r"[^\W_][\w+#]*")


def members(category: str, text: str) -> list[str]:
    """Members of the category (by stem) that ``text`` names, in order, as written."""
    known = _CATEGORY_MEMBERS.get(category)
    if not known:
        return []
    found = [m.group(0) for m in _TOKEN.finditer(text) if m.group(0).lower() in known]
    return list(dict.fromkeys(found))
#: Share of the previous line's coverage that the next line inherits.
CONTEXT_SHARE = 0.8


def _follows(before: EvidenceLine, line: EvidenceLine) -> bool:
    """``line`` comes right after ``before`` in the same view of the same session."""
    if before.session_id != line.session_id or before.layer != line.layer:
        return False
    if not before.turn_indices or not line.turn_indices:
        return False
    return 0 <= line.turn_indices[0] - before.turn_indices[-1] <= 1


def line_terms(line: EvidenceLine) -> frozenset[str]:
    """The line's content stems plus the participants it is about (by pronoun too)."""
    return _line_terms(line.text, line.about)


@memo(32768)
def _line_terms(text: str, about: tuple[str, ...]) -> frozenset[str]:
    return lexical.term_set(text) | frozenset(lexical.stem(a.split()[0]) for a in about)


def subject_fit(cues: Cues, line: EvidenceLine) -> int:
    """+1 when the line is about the person asked about, -1 when only about someone else."""
    if not cues.subjects or not line.about:
        return 0
    if set(line.about) & set(cues.subjects):
        return 1
    return -1 if len(cues.subjects) == 1 else 0


def _idf(q: Iterable[str], df: Counter[str], n_lines: int) -> dict[str, float]:
    n = n_lines + 1
    return {t: math.log(1.0 + n / (1.0 + df[t])) for t in q}


@dataclass(frozen=True, slots=True)
class _Features:
    """What ranking needs of a line that does not change as more lines are read."""

    matched: tuple[str, ...]
    typed: bool
    static: float
    #: Index of the line said just before this one in the same view (-1: none).
    prev: int = -1
    #: (session, turn) keys of the line, for the retriever's turn boost.
    turns: tuple[tuple[str, int], ...] = ()


class Ranker:
    """Ranks one question's evidence lines, remembering each line's features.

    The controller re-ranks after every read while V only grows, so the
    per-line work (tokenising, pattern tests) is done once per line and the
    term document frequencies are updated incrementally; each ranking then
    costs a few additions per line.
    """

    def __init__(self, cues: Cues, terms: Sequence[str] | None = None) -> None:
        self.cues = cues
        self.query = list(dict.fromkeys(terms if terms is not None else cues.terms))
        self._qset = frozenset(self.query)
        self._lines: Sequence[EvidenceLine] | None = None
        self._features: list[_Features] = []
        self._df: Counter[str] = Counter()
        #: Relations the question names someone by ("my sister").
        self._relations = frozenset(lexical.stem(r) for r in vocab.RELATIONS) & self._qset
        #: Stem of a name the evidence gives that relation -> the relation ("inê" -> "sister").
        self.aliases: dict[str, str] = {}
        #: Question terms a line covers in other words: money terms by a sum of money,
        #: a word by its near-synonym, a category noun by a member ("languages": "Rust").
        self._money = _MONEY_STEMS & self._qset if cues.answer_type == "amount" else frozenset()
        self._synonyms = {t: _SYNONYMS[t] for t in self.query if t in _SYNONYMS}
        self._categories = [t for t in self.query if t in _CATEGORY_MEMBERS]
        #: Words that only name the kind of answer ("colour", "old"): a value of the kind
        #: covers them ("My stapler is red" answers "what colour").
        self._kind_words = (cues.expects.words & self._qset if cues.expects is not None
                            else frozenset())

    def _learn_aliases(self, line: EvidenceLine) -> bool:
        """Note "my sister Inês" in ``line``; True when a new alias was learnt."""
        new = False
        for rel, name in lexical.kin(line.text):
            key = lexical.stem(name)
            if rel in self._relations and key not in self.aliases:
                self.aliases[key] = rel
                new = True
        return new

    def _feature(self, line: EvidenceLine) -> _Features:
        cues = self.cues
        have = line_terms(line)
        if self.aliases:
            # A line about Inês answers a question about "my sister" once the evidence
            # has said who the sister is.
            have = have | {rel for key, rel in self.aliases.items() if key in have}
        have = have | self._covered_otherwise(line, have)
        matched = tuple(t for t in self.query if t in have)
        typed = type_match(cues, line)
        static = 0.15 if typed and cues.answer_type != "thing" else 0.0
        novel = len(lexical.term_set(line.text) - self._qset)
        static += _NOVELTY_BONUS * min(novel, 3) / 3
        static += _SUBJECT_BONUS * subject_fit(cues, line)
        if _CAPTION.search(line.text):
            static -= _CAPTION_PENALTY
        if line.text.rstrip().endswith("?"):
            static -= _QUESTION_PENALTY
        if line.speaker == ASSISTANT and not cues.asks_assistant:
            static -= _ASSISTANT_PENALTY
        static += _LAYER_BONUS * int(line.layer)
        return _Features(matched, typed, static,
                         turns=tuple((line.session_id, t) for t in line.turn_indices))

    def _covered_otherwise(self, line: EvidenceLine, have: frozenset[str]) -> set[str]:
        extra: set[str] = set()
        if self._money and vocab.AMOUNT.search(line.text):
            extra |= self._money
        for t, family in self._synonyms.items():
            if t not in have and family & have:
                extra.add(t)
        for t in self._categories:
            if members(t, line.text):
                extra.add(t)
        if self._kind_words and not self._kind_words <= have and cues_holds(self.cues, line):
            extra |= self._kind_words
        return extra

    def _sync(self, lines: Sequence[EvidenceLine]) -> None:
        if self._lines is not lines or len(lines) < len(self._features):
            self._lines, self._features, self._df = lines, [], Counter()
        if self._relations and any(
                [self._learn_aliases(ln) for ln in lines[len(self._features):]]):
            self._features, self._df = [], Counter()  # earlier lines may name the person
        for i in range(len(self._features), len(lines)):
            f = self._feature(lines[i])
            if i > 0 and _follows(lines[i - 1], lines[i]):
                f = _Features(f.matched, f.typed, f.static, i - 1, f.turns)
            self._features.append(f)
            self._df.update(f.matched)

    def rank(self, lines: Sequence[EvidenceLine], limit: int | None = None) -> list[Scored]:
        self._sync(lines)
        weights = _idf(self.query, self._df, len(lines))
        total = sum(weights.values()) or 1.0
        boost: dict[tuple[str, int], float] = getattr(lines, "turn_boost", None) or {}
        feats = self._features
        own = [sum(weights[t] for t in f.matched) / total if f.matched else 0.0 for f in feats]
        keys = []
        for i, f in enumerate(feats):
            # A reply inherits part of what the line before it matched: the answer to
            # "what did X think of Y" is often the sentence after the one naming Y.
            cov = max(own[i], CONTEXT_SHARE * own[f.prev]) if f.prev >= 0 else own[i]
            extra = 0.0
            if boost and f.turns:
                extra = boost.get(f.turns[0], 0.0) if len(f.turns) == 1 else max(
                    boost.get(k, 0.0) for k in f.turns)
            keys.append((-(cov + f.static + extra), i, cov))
        best = heapq.nsmallest(limit, keys) if limit is not None else sorted(keys)
        return [Scored(lines[i], -neg, cov, self._features[i].typed) for neg, i, cov in best]


def cues_holds(cues: Cues, line: EvidenceLine) -> bool:
    """Does the line hold a value of the finer kind the question expects?"""
    return cues.expects is not None and answer_types.holds(cues.expects, line.text)


_local = threading.local()


def with_aliases(cues: Cues, lines: Sequence[EvidenceLine]) -> Cues:
    """``cues`` with the people the question names by relation added to its names.

    "Which place did my sister like?" asks about Inês once the evidence says
    "my sister Inês": her name is then part of the question, not an answer.
    """
    ranker = Ranker(cues)
    ranker._sync(lines)
    if not ranker.aliases:
        return cues
    names = [n for ln in lines for _, n in lexical.kin(ln.text)
             if lexical.stem(n) in ranker.aliases]
    return replace(cues, names=tuple(dict.fromkeys((*cues.names, *names))))


def rank(cues: Cues, lines: Sequence[EvidenceLine], terms: Sequence[str] | None = None,
         limit: int | None = None) -> list[Scored]:
    """Lines best first (ties: earlier read).

    The score is the weighted share of the question covered (IDF over the
    lines read, so a name on every line counts little), plus small terms for
    holding the asked-for kind of thing, saying something the question does
    not (a line that only repeats the question answers nothing), being about
    the right person, and the finer layer; image captions, which are
    machine-written, lose a little. Rankings of the same question's growing
    line list reuse a :class:`Ranker`.
    """
    if terms is not None:
        return Ranker(cues, terms).rank(lines, limit)
    ranker: Ranker | None = getattr(_local, "ranker", None)
    if ranker is None or ranker.cues is not cues or ranker._lines is not lines:
        ranker = Ranker(cues)
        _local.ranker = ranker
    return ranker.rank(lines, limit)


@dataclass(frozen=True, slots=True)
class Sufficiency:
    """Whether the evidence answers the question, and what is still missing."""

    enough: bool
    best: Scored | None
    missing: tuple[str, ...]


def judge(cues: Cues, lines: Sequence[EvidenceLine]) -> Sufficiency:
    """Enough when one line covers most of the question and holds the asked-for kind of thing.

    List and counting questions are never "enough" from one line: their items
    are spread over sessions, so they keep searching until reflection adds
    nothing new.
    """
    if not lines:
        return Sufficiency(False, None, tuple(dict.fromkeys(cues.terms)))
    ranked = rank(cues, lines, limit=5)
    best = ranked[0]
    seen: set[str] = set()
    for s in ranked[:5]:
        seen |= line_terms(s.line)
    missing = tuple(t for t in dict.fromkeys(cues.terms) if t not in seen)
    enough = best.coverage >= SUFFICIENT and best.typed and not cues.counting
    return Sufficiency(enough, best, missing)
