"""Small text helpers of the profile rules: contractions, clauses, names, noun phrases.

All regex and word lists, microseconds a sentence: the rules run on every
write. Offsets are into the normalised sentence (:func:`normalise`), which is
what every rule reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memstrata.profiles.lexicon import (
    NAME_VERBS,
    NOT_NAMES,
    ORG_HEADS,
    PERSON_RELATIONS,
    PLACE_HEADS,
)
from memstrata.profiles.model import fold

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})
_CONTRACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r) for p, r in (
        (r"\bI'm\b", "I am"), (r"\bwon't\b", "will not"), (r"\bcan't\b", "can not"),
        (r"\b(she|he|it|that|there|what|who|where)'s been\b", r"\1 has been"),
        (r"\b(she|he|it|that|there|what|who|where)'s\b", r"\1 is"),
        (r"n't\b", " not"), (r"'re\b", " are"), (r"'ve\b", " have"), (r"'ll\b", " will"),
        (r"\b(I|you|we|they|she|he)'d\b", r"\1 would"),
    ))


def normalise(sentence: str) -> str:
    """Straight apostrophes and spelled-out contractions ("I'm" -> "I am"); possessives kept."""
    text = sentence.translate(_APOSTROPHES)
    if "'" not in text:
        return text
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


_CLAUSE_BREAK = re.compile(
    r",?\s+but\s+|;\s*|:\s+|\s+-\s+|,\s+(?:and|so|while|whereas|though|although)\s+"
    r"|,\s+(?=(?:I|we|she|he|you|they)\b)|\s+(?:and|but|so)\s+(?=(?:I|we|she|he|they)\s)",
    re.IGNORECASE)
_QUESTION_BREAK = re.compile(
    r",\s+(?=(?:should|do|does|did|is|are|can|could|would|will|what|how|why|when|where|who|"
    r"any|right)\b)", re.IGNORECASE)


def clauses(sentence: str, *, question: bool = False) -> list[tuple[int, int]]:
    """(start, end) of each clause: cut at "but", ";", ", and", ", so", ", I ..." and the like;
    a ``question`` also before its asking part (", should I worry?")."""
    cuts: list[tuple[int, int]] = []
    for pattern in (_CLAUSE_BREAK, _QUESTION_BREAK) if question else (_CLAUSE_BREAK,):
        cuts += [(m.start(), m.end()) for m in pattern.finditer(sentence)]
    cuts.sort()
    out, pos = [], 0
    for start, end in cuts:
        if start < pos:
            continue
        if sentence[pos:start].strip():
            out.append((pos, start))
        pos = end
    if sentence[pos:].strip():
        out.append((pos, len(sentence)))
    return out


@dataclass(frozen=True, slots=True)
class NameSpan:
    """A capitalised name found in a sentence, and what its own words say of its kind."""

    start: int
    end: int
    text: str
    possessive: bool
    kind: str | None
    tokens: int
    #: Opens the sentence: its capital says less ("Lunch was late").
    initial: bool = False


_TOKEN = re.compile(r"[^\W\d_][\w'\-]*|\d+")
#: A capital inside the sentence that is not the pronoun "I" (Latin letters; others are rare).
_INNER_CAPITAL = re.compile(r"[\s\"(][A-Z\u00C0-\u00DE][^\s']")
_FIRST_TWO = re.compile(r"\W*([^\W\d_][\w'\-]*)(?:\s+[\w'\-]+)?")
_CONNECTORS = frozenset("de da do dos das van von der den del la le di du of".split())
_PLACE_PREPOSITIONS = frozenset(
    "in to from at visit visited visiting near around towards toward into".split())
_PERSON_PREPOSITIONS = frozenset("with".split())


def _bare(token: str) -> tuple[str, bool]:
    if token.endswith("'s") or token.endswith("'S"):
        return token[:-2], True
    if token.endswith("s'"):
        return token[:-1], True
    return token, False


def _capital(token: str) -> bool:
    bare, _ = _bare(token)
    if len(bare) < 2 or not bare[0].isupper():
        return False
    low = fold(bare)
    return low not in NOT_NAMES and low not in PERSON_RELATIONS


def _common_opening(word: str, follow: str) -> bool:
    """ "Dancing is ...", "Challenges are ...": an opening word, not a name."""
    low = word.lower()
    return low.endswith("ing") or (low.endswith("s") and follow in ("are", "were"))


def _kind_of(words: list[str], before: str | None) -> str | None:
    folded = [fold(w) for w in words]
    if any(w in ORG_HEADS for w in folded):
        return "org"
    if folded[0] in PLACE_HEADS or folded[-1] in PLACE_HEADS:
        return "place"
    if before in _PLACE_PREPOSITIONS:
        return "place"
    if before in _PERSON_PREPOSITIONS:
        return "person"
    return None


def names(sentence: str) -> list[NameSpan]:
    """Capitalised runs that look like names ("Inês", "Cervejaria Ramiro", "Ao 26 Vegan ...").

    A run opening the sentence is a name only when a verb or a possessive
    follows it, or it is several words long: "Great." and "Lisbon in May is
    lovely" open with capitals that are not subjects worth a profile.
    """
    if _INNER_CAPITAL.search(sentence) is None:  # at most the first word: a name if a verb follows
        first = _FIRST_TWO.match(sentence)
        if first is None or not _capital(first.group(1)):
            return []
        tokens = list(_TOKEN.finditer(sentence, 0, first.end()))
    else:
        tokens = list(_TOKEN.finditer(sentence))
    out: list[NameSpan] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i].group(0)
        if not tok[0].isupper() or not _capital(tok):
            i += 1
            continue
        j = i
        while not _bare(tokens[j].group(0))[1] and j + 1 < len(tokens):
            nxt = tokens[j + 1]
            if sentence[tokens[j].end():nxt.start()] != " ":
                break
            word = nxt.group(0)
            if _capital(word):
                j += 1
                continue
            if ((word.isdigit() or word in _CONNECTORS) and j + 2 < len(tokens)
                    and sentence[nxt.end():tokens[j + 2].start()] == " "
                    and _capital(tokens[j + 2].group(0))):
                j += 2
                continue
            break
        words = [t.group(0) for t in tokens[i:j + 1]]
        last, possessive = _bare(words[-1])
        words[-1] = last
        follow = tokens[j + 1].group(0).lower() if j + 1 < len(tokens) else ""
        if i == 0 and len(words) == 1 and not possessive and (
                (follow not in NAME_VERBS
                 and not re.match(r",\s+(?:my|our)\b", sentence[tokens[j].end():]))
                or _common_opening(words[0], follow)):
            i = j + 1
            continue
        before = tokens[i - 1].group(0).lower() if i > 0 else None
        end = tokens[j].end() - (2 if possessive else 0)
        text = " ".join(words).rstrip("-'")
        out.append(NameSpan(tokens[i].start(), end - (len(" ".join(words)) - len(text)), text,
                            possessive, _kind_of(words, before), len(words), i == 0))
        i = j + 1
    return out


_NP_STOP = re.compile(
    r"[,.;:!?()\"]|\s(?:because|since|when|while|but|so|if|although|though|until|which|who|"
    r"where|whereas|and then|as well as|except)\s", re.IGNORECASE)
_NP_TAIL = re.compile(
    r"(?:\s+(?:anymore|any more|now|too|also|either|a lot|so much|very much|lately|these days|"
    r"again|as well|right now|at the moment|nowadays|though|really))+\s*$", re.IGNORECASE)
_NP_HEAD = re.compile(r"^(?:the|a|an|some|to)\s+", re.IGNORECASE)


def noun_phrase(text: str, *, max_words: int = 8, cut: int | None = None) -> str:
    """The phrase at the start of ``text``: up to a clause boundary, ``cut`` or ``max_words``.

    Leading articles and trailing fillers ("anymore", "now") are dropped.
    """
    if cut is not None:
        text = text[:cut]
    m = _NP_STOP.search(text)
    if m:
        text = text[:m.start()]
    words = text.split()[:max_words]
    phrase = _NP_TAIL.sub("", " ".join(words)).strip()
    phrase = _NP_HEAD.sub("", phrase).strip()
    return phrase


def clip_words(text: str, max_words: int) -> str:
    """At most ``max_words`` words of ``text``, cut at its first hard stop."""
    m = re.search(r"[.;!?]", text)
    if m:
        text = text[:m.start()]
    return " ".join(text.split()[:max_words]).rstrip(",")
