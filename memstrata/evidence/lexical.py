"""Cheap word matching for the rule policy and the extractive answer.

The controller compares the question with every line of evidence it reads, a
few hundred lines a question, so matching is regex tokenising plus
stemming (the index's Snowball stemmer after a table of irregular forms), with
results cached per text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from memstrata.memo import memo

from memstrata.text.lexicon import FILLER, STOPWORDS
from memstrata.text.terms import stem_word
from memstrata.text.vocab import RELATION_MODIFIERS, RELATIONS, TIME_SHIFT_WORDS, TIME_UNIT_WORDS

# Letters of any alphabet: "Inês" is one word and one name, not "In" and "s".
_WORD = re.compile(r"[^\W_]+(?:['’][^\W\d_]+)?")
_UPPER = "A-ZÀ-ÖØ-Þ"
_NAME_WORD = rf"[{_UPPER}](?:[^\W\d_]|['’\-])+"
_NAME = re.compile(rf"\b{_NAME_WORD}(?:\s+{_NAME_WORD})*")

#: Words a question is built from that say nothing about its topic.
QUESTION_WORDS: frozenset[str] = frozenset(
    """what when where who whom whose which why how did does do is are was were has have had
    would could should can will may might kind type sort also ever yet
    much many long often""".split()
)
# The base list counts time words ("year", "last", "ago") as stop words; in a
# question they matter ("last year"), so they are kept as content.
_KEEP = TIME_UNIT_WORDS | TIME_SHIFT_WORDS
_STOP = (STOPWORDS - _KEEP) | QUESTION_WORDS | {"s", "t", "'s"}

_IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "going": "go", "did": "do", "done": "do",
    "made": "make", "bought": "buy", "took": "take", "taken": "take", "saw": "see",
    "seen": "see", "gave": "give", "given": "give", "got": "get", "gotten": "get",
    "ran": "run", "running": "run", "swam": "swim", "began": "begin", "begun": "begin",
    "wrote": "write", "written": "write", "read": "read", "met": "meet", "felt": "feel",
    "kept": "keep", "left": "leave", "lost": "lose", "won": "win", "found": "find",
    "thought": "think", "taught": "teach", "brought": "bring", "sang": "sing",
    "sung": "sing", "drew": "draw", "drawn": "draw", "built": "build", "spent": "spend",
    "told": "tell", "said": "say", "heard": "hear", "knew": "know", "known": "know",
    "came": "come", "ate": "eat", "eaten": "eat", "flew": "fly", "rode": "ride",
    "children": "child", "kids": "kid", "women": "woman", "men": "man", "people": "person",
    "moved": "move", "loved": "love", "liked": "like",
}


@memo(65536)
def stem(word: str) -> str:
    """The stem of one word: irregular forms first, then the index's Snowball stemmer.

    The same stemmer as the BM25 index (:mod:`memstrata.text.terms`), so the
    controller's matching and the retriever's agree on which words meet
    ("paintings"/"painted"/"paint", "name"/"named"); irregular forms
    ("went"/"go", "children"/"child") are mapped before stemming.
    """
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = _IRREGULAR.get(w, w)
    if w.isdigit():
        return w
    return "".join(stem_word(w)) or w


#: A relation and the name it introduces: "my sister Inês", "Ana's coach, Bo", "Inês, my sister".
_MOD = "|".join(RELATION_MODIFIERS)
_POSSESSIVE = rf"(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir|{_NAME_WORD}['’]s)"
_REL = "|".join(RELATIONS)
_KIN = re.compile(
    rf"\b{_POSSESSIVE}\s+(?:(?:{_MOD})\s+)?({_REL})\s*,?\s+({_NAME_WORD})"
    rf"|\b({_NAME_WORD}),\s+{_POSSESSIVE}\s+(?:(?:{_MOD})\s+)?({_REL})\b")


def relation_of(text: str, name: str) -> tuple[str, str] | None:
    """(possessive, relation) ``text`` gives ``name``: "my sister Inês" -> ("my", "sister")."""
    for m in _KIN.finditer(text):
        rel, who = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if who == name:
            owner = re.match(_POSSESSIVE, m.group(0)[len(who) + 2:] if m.group(3)
                             else m.group(0))
            return (owner.group(0) if owner else "", rel)
    return None


@memo(8192)
def kin(text: str) -> tuple[tuple[str, str], ...]:
    """(relation stem, name) pairs ``text`` states: "my sister Inês" -> ("sister", "Inês")."""
    out = []
    for m in _KIN.finditer(text):
        rel, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if name.lower() not in _STOP:
            out.append((stem(rel), name))
    return tuple(out)


def words(text: str) -> list[str]:
    """Word tokens in order, original case."""
    return _WORD.findall(text)


def is_stop(word: str) -> bool:
    low = word.lower().replace("’", "'")
    return low in _STOP or len(low) < 2 and not low.isdigit()


@memo(32768)
def terms(text: str) -> tuple[str, ...]:
    """Stems of the content words of ``text``, in order, repeats kept."""
    return tuple(stem(w) for w in _WORD.findall(text) if not is_stop(w))


def term_set(text: str) -> frozenset[str]:
    return frozenset(terms(text))


@memo(8192)
def names(text: str) -> tuple[str, ...]:
    """Capitalised runs that are not sentence openers or question words ("Caroline", "New York")."""
    out: list[str] = []
    for m in _NAME.finditer(text):
        run = m.group(0).split()
        start = m.start()
        opener = start == 0 or text[:start].rstrip()[-1:] in ".!?:\"“("
        if opener and run and run[0].lower() in _STOP:
            run = run[1:]
        while run and (run[0].lower() in FILLER or run[0].lower() in _STOP):
            run = run[1:]
        run = [re.sub(r"['’]s$", "", w) for w in run
               if w.lower() not in QUESTION_WORDS and w != "I"]
        if run and not (opener and len(run) == 1 and run[0].lower() in STOPWORDS):
            out.append(" ".join(run))
    return tuple(dict.fromkeys(out))


def is_filler(word: str) -> bool:
    """Chat filler ("wow", "awesome") or a function word: never an answer on its own."""
    low = word.lower().replace("’", "'")
    return low in FILLER or is_stop(low)


def coverage(query_terms: Iterable[str], text: str | frozenset[str],
             weights: dict[str, float] | None = None) -> float:
    """Weighted share of ``query_terms`` found in ``text`` (or in a set of stems), 0..1."""
    q = list(dict.fromkeys(query_terms))
    if not q:
        return 0.0
    have = term_set(text) if isinstance(text, str) else text
    w = weights or {}
    total = sum(w.get(t, 1.0) for t in q)
    got = sum(w.get(t, 1.0) for t in q if t in have)
    return got / total if total else 0.0


def estimate_tokens(text: str) -> int:
    """About four characters a token: an ESTIMATE for text that no tokenizer has counted."""
    return (len(text) + 3) // 4
