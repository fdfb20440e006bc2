"""What kind of answer a question expects, and whether a sentence holds one.

The extractive answer quotes a span; it can only be trusted when the span is
the kind of thing asked for. "How many days" wants a number of days (not the
1500 of a budget), "how old" an age, "what is her job" an occupation, "what
colour" a colour, "how far" a distance. Each kind here is a small class: a
pattern that recognises the question, and a lexicon or pattern that finds a
value of that kind in a sentence. A question of no known kind expects nothing
in particular (``expected`` gives None) and is answered as before.

A count is tied to what it counts: "how many hives" is answered only by a
number of hives, "how many hours a week" only by hours. A number of another
unit is never an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memstrata.memo import memo
from typing import Literal

from memstrata.evidence import lexical
from memstrata.evidence.type_lexicon import (
    COLOURS,
    COLOUR_MODIFIERS,
    DIMENSION_UNITS,
    DISTANCE_UNITS,
    MEASURE_UNITS,
    OCCUPATIONS,
    UNIT_SYNONYMS,
)
from memstrata.text import vocab

Kind = Literal["age", "occupation", "colour", "distance", "measure", "frequency", "times",
               "clock", "quantity", "duration"]
#: Kinds this module finds; the others a question may expect (date, person, place, money,
#: duration) are cut by :func:`memstrata.evidence.extract.span_for`.
KINDS: frozenset[str] = frozenset(Kind.__args__)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Expect:
    """The kind of answer a question asks for.

    ``unit`` is what a count counts ("hive", "day") or, for a measure, its
    dimension ("weight", "length"; "any" when the question does not say).
    ``words`` are the question's stems that only name the kind ("colour",
    "job", "old", "days"): a line holding a value of the kind covers them, and
    they say nothing about whom or what the question is about.
    """

    kind: Kind
    unit: str | None = None
    words: frozenset[str] = frozenset()


# -- numbers --------------------------------------------------------------------------------

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
         "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_WORDNUM = (rf"(?:(?:{'|'.join(_TENS)})(?:[-\s](?:{'|'.join(_ONES[1:10])}))?"
            rf"|{'|'.join(_ONES)}|(?:a|one|two|three|five)\s+hundred)")
_DIGITS = r"\d+(?:[.,]\d+)*(?:\s*[-–]\s*\d+(?:[.,]\d+)?)?"
#: A number as chat writes it, vague ones included ("a few", "a couple of", "a dozen").
NUMBER = (rf"(?:{_DIGITS}|{_WORDNUM}|a\s+dozen|dozens\s+of|a\s+couple(?:\s+of)?|couple\s+of"
          r"|a\s+few|few|several|multiple|many|half\s+an?|an?\s+(?:hour|mile)\s+and\s+a\s+half)")
_APPROX = r"(?:(?:about|around|almost|nearly|over|under|roughly|approximately|just|only|" \
          r"maybe|at\s+least|more\s+than|less\s+than)\s+)?"
_NUMBER_RE = re.compile(rf"\b{NUMBER}\b", re.IGNORECASE)

# -- what each question kind looks like -----------------------------------------------------

def _attribute(nouns: str) -> str:
    """"What is my sister's <noun>?", "what was the <noun> of ...": the noun is asked."""
    return (rf"|^\s*what(?:'s|\s+is|\s+was|\s+are|\s+were)\s+(?:the\s+)?(?:[\w'’\-]+\s+)"
            rf"{{0,3}}?(?:{nouns})\b")


_HOW_FAR = re.compile(r"\bhow\s+far\b" + _attribute("distance"), re.IGNORECASE)
_HOW_OLD = re.compile(r"\bhow\s+old\b|\b(?:what|which)\s+age\b|\bat\s+what\s+age\b"
                      + _attribute("age"), re.IGNORECASE)
_HOW_OFTEN = re.compile(r"\bhow\s+(?:often|frequently|regularly)\b|\bhow\s+many\s+times\s+"
                        r"(?:a|an|per|each|every)\s+\w+", re.IGNORECASE)
_HOW_MANY_TIMES = re.compile(r"\bhow\s+many\s+times\b", re.IGNORECASE)
_HOW_LONG = re.compile(r"\bhow\s+long\b|\bhow\s+much\s+(?:longer|time)\b", re.IGNORECASE)
_MEASURE_ASK: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bhow\s+(?:tall|high|deep|wide|big|short)\b|\b(?:what|which)\s+(?:is\s+|was\s+)?"
                r"(?:the\s+|my\s+|[\w']+\s+)?(?:height|length|width|depth)\b"
                + _attribute("height|length|width|depth"), re.IGNORECASE), "length"),
    (re.compile(r"\bhow\s+heavy\b|\bhow\s+much\b.*\bweigh|\b(?:what|which)\b.*\bweight\b",
                re.IGNORECASE), "weight"),
    (re.compile(r"\b(?:what|which)\b.*\btemperature\b|\bhow\s+(?:hot|cold|warm)\b",
                re.IGNORECASE), "temperature"),
    (re.compile(r"\bhow\s+fast\b|\b(?:what|which)\b.*\bspeed\b", re.IGNORECASE), "speed"),
    (re.compile(r"\b(?:what|which)\s+(?:share|percentage|percent|proportion|fraction)\b",
                re.IGNORECASE), "percent"),
)
_HOW_MANY = re.compile(r"\bhow\s+(many|much)\s+((?:[\w'\-]+\s+){0,3})", re.IGNORECASE)
_WHAT_TIME = re.compile(r"\b(?:what|which)\s+time\b(?!\s+(?:of\s+(?:the\s+)?(?:year|season|"
                        r"month)|period|frame))|\bat\s+what\s+time\b", re.IGNORECASE)
_COLOUR_ASK = re.compile(r"\b(?:what|which)\s+colou?rs?\b|\bcolou?r\s+(?:is|was|are|were)\b"
                         + _attribute("colou?rs?"), re.IGNORECASE)
_JOB_NOUNS = r"(?:job|occupation|profession|line\s+of\s+work|day\s+job|trade)"
_JOB_ASK = re.compile(
    rf"^\s*what(?:'s|\s+is|\s+was|\s+are|\s+were)\s+(?:the\s+)?(?:[\w'\-]+\s+){{0,3}}?"
    rf"{_JOB_NOUNS}s?\b(?!\s+(?:at|in|of)\b)"
    rf"|^\s*(?:what|which)\s+(?:[\w\-]+\s+)?{_JOB_NOUNS}s?\s+(?:does|did|do|is|was|has|had|"
    r"might|will|would|could|can)\b"
    r"|\bdo(?:es)?\s+for\s+(?:a\s+)?(?:living|work|a\s+job)\b"
    r"|^\s*what\s+(?:does|did|do)\s+[\w'\-]+(?:\s+[\w'\-]+)?\s+work\s+as\b"
    r"|^\s*what\s+(?:is|was)\s+[\w'\-]+(?:\s+[\w'\-]+)?\s+working\s+as\b",
    re.IGNORECASE)
#: Time units: a count of them is a duration, said with its unit ("five days").
_TIME_UNITS = frozenset(lexical.stem(u) for u in (*vocab.DURATION_UNITS, "night", "weekend",
                                                  "season", "semester", "term", "fortnight"))
_MEASURE_STEMS = frozenset(lexical.stem(u) for u in MEASURE_UNITS)
_IRREGULAR_PLURALS = frozenset("people children men women feet teeth mice geese".split())
_NOT_UNITS = frozenset("of did does do have has had is are was were will would can could "
                       "should more less other different".split())


def _plural(word: str) -> bool:
    low = word.lower()
    return low in _IRREGULAR_PLURALS or (len(low) > 2 and low.endswith("s")
                                         and not low.endswith(("ss", "us", "'s")))


def _counted(words: str) -> str | None:
    """The noun a "how many" counts: the first plural of the next words ("video game
    tournaments" -> "tournaments"), else the first word that is not a function word."""
    toks = [w for w in words.split() if w]
    for w in toks[:3]:
        if w.lower() in _NOT_UNITS:
            break
        if _plural(w):
            return w.lower()
    first = toks[0].lower() if toks else ""
    if first and first not in _NOT_UNITS and not lexical.is_stop(first):
        return first
    return None


def _stems(*words: str) -> frozenset[str]:
    return frozenset(lexical.stem(w) for w in words)


_AGE_WORDS = _stems("old", "age", "aged")
_FAR_WORDS = _stems("far", "distance")
_OFTEN_WORDS = _stems("often", "frequently", "regularly", "times")
_TIME_WORDS = _stems("time")
_LONG_WORDS = _stems("long", "longer", "time")
_COLOUR_WORDS = _stems("colour", "color", "colours", "colors")
_JOB_WORDS = _stems("job", "occupation", "profession", "work", "living", "trade", "line")
_MEASURE_WORDS = _stems("tall", "high", "deep", "wide", "big", "short", "height", "length",
                        "width", "depth", "size", "heavy", "weigh", "weight", "temperature",
                        "hot", "cold", "warm", "fast", "speed", "share", "percentage",
                        "percent", "proportion", "fraction")


@memo(4096)
def expected(question: str, money: bool = False) -> Expect | None:
    """The kind of answer ``question`` asks for, or None when it asks for no known kind.

    ``money`` is the caller's reading that the question asks for a sum of money
    (then "how much" is not a measure: :mod:`memstrata.evidence.cues` answers it).
    """
    q = " ".join(question.split())
    if _HOW_FAR.search(q):
        return Expect("distance", words=_FAR_WORDS)
    if _HOW_OLD.search(q):
        return Expect("age", words=_AGE_WORDS)
    if _HOW_OFTEN.search(q):
        return Expect("frequency", words=_OFTEN_WORDS)
    for pattern, dimension in _MEASURE_ASK:
        if pattern.search(q):
            return Expect("measure", dimension, _MEASURE_WORDS)
    if _HOW_LONG.search(q):
        return Expect("duration", words=_LONG_WORDS)
    if _WHAT_TIME.search(q):
        return Expect("clock", words=_TIME_WORDS)
    if _COLOUR_ASK.search(q):
        return Expect("colour", words=_COLOUR_WORDS)
    if _JOB_ASK.search(q):
        return Expect("occupation", words=_JOB_WORDS)
    if _HOW_MANY_TIMES.search(q):
        return Expect("times", "time", _OFTEN_WORDS)
    m = _HOW_MANY.search(q)
    if m and not money:
        noun = _counted(m.group(2))
        if noun is None:
            return None
        unit = lexical.stem(noun)
        if m.group(1).lower() == "much":
            if unit in _TIME_UNITS or unit == lexical.stem("time"):
                return None  # "how much time": a duration, cues' "how long" reading
            return Expect("measure", "any")  # "how much ginger syrup": the syrup is the subject
        return Expect("quantity", unit, _stems(noun))
    return None


# -- finding a value of each kind in a sentence ---------------------------------------------

_AGE = re.compile(
    rf"\b{NUMBER}[\s-]+(?:years?|yrs?|months?|weeks?)[\s-]+old\b"
    rf"|\baged?\s+(?:{_DIGITS}|{_WORDNUM})\b"
    rf"|\bturn(?:s|ed|ing)?\s+(?:{_DIGITS}|{_WORDNUM})\b"
    r"|\b(?:in\s+(?:his|her|their|my|our|your)\s+)?(?:early\s+|mid[\s-]?|late\s+)?"
    r"(?:twenties|thirties|forties|fifties|sixties|seventies|eighties|nineties|teens|[2-9]0s)\b"
    r"|\b\d{1,3}(?:st|nd|rd|th)\s+birthday\b"
    rf"|(?:(?<=\bis\s)|(?<=\bwas\s)|(?<=\bam\s)|(?<=\bare\s)|(?<=\bwere\s)|(?<=['’]s\s))"
    rf"(?:now\s+|only\s+|just\s+)?(?:\d{{1,3}}|{_WORDNUM})"
    r"(?=\s*(?:[.,;!?)]|$|\s+(?:and|but|now|this|today|years?)\b))",
    re.IGNORECASE)
_DISTANCE = re.compile(
    rf"\b{_APPROX}{NUMBER}(?:\s*|-)(?:{'|'.join(DISTANCE_UNITS)})\b"
    rf"|\b{_APPROX}(?:an?|one|{NUMBER})[\s-]+(?:{'|'.join(DISTANCE_UNITS)})\b"
    rf"|\b{_APPROX}(?:an?|{NUMBER})[\s-]+(?:hours?|minutes?|mins?)['’]?\s+(?:walk|drive|ride|"
    r"away|by\s+\w+|on\s+foot|from\s+\w+)"
    r"|\b\d+(?:\.\d+)?\s?k\b(?!\s*(?:euros?|dollars?|pounds?|followers|views|likes))"
    r"|\b(?:half[\s-])?marathons?\b",
    re.IGNORECASE)
_FREQUENCY = re.compile(
    rf"\b(?:at\s+least\s+|about\s+|around\s+)?(?:once|twice|thrice|{NUMBER}\s+times?)"
    rf"(?:\s+or\s+(?:once|twice|thrice|{NUMBER}(?:\s+times?)?))?\s+(?:a|an|per|each|every)\s+"
    r"(?:other\s+)?\w+"
    r"|\b(?:every|each)\s+(?:other\s+|single\s+)?(?:day|night|morning|afternoon|evening|week|"
    r"weekend|month|year|season|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|\d+\s+\w+|few\s+\w+|couple\s+of\s+\w+|"
    rf"(?:{_WORDNUM})\s+\w+)s?\b"
    r"|\b(?:daily|nightly|weekly|fortnightly|biweekly|monthly|yearly|annually|hourly)\b"
    r"|\bon\s+(?:weekends|weekdays|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|"
    r"sundays)\b"
    r"|\b(?:most|some)\s+(?:days|nights|mornings|evenings|weekends)\b",
    re.IGNORECASE)
_DURATION_UNITS = r"(?:years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|seconds?|" \
    r"secs?|decades?|nights?|weekends?|semesters?|terms?|fortnights?)"
#: A stretch of time ("about fifty minutes", "an hour and a half", "since 2016"); not a
#: frequency ("three times a week" says how often).
_DURATION = re.compile(
    r"(?<!times\s)(?<!time\s)(?<!once\s)(?<!twice\s)(?<!thrice\s)(?<!per\s)(?<!every\s)"
    rf"\b{_APPROX}(?:{NUMBER}|an?|one)[\s-]+{_DURATION_UNITS}"
    rf"(?:\s+and\s+a\s+half)?(?:\s+ago)?\b"
    rf"|\bsince\s+(?:(?:early|late|mid)[\s-]+)?(?:(?:{'|'.join(vocab.MONTHS)})"
    r"(?:\s+(?:19|20)\d\d)?|(?:19|20)\d\d|last\s+(?:year|month|week|summer|winter|spring|"
    r"fall|autumn)|childhood|college|university|high\s+school)\b",
    re.IGNORECASE)
_TIMES = re.compile(rf"\b(?:once|twice|thrice|{NUMBER}\s+times)\b", re.IGNORECASE)
_CLOCK = re.compile(
    r"\b\d{1,2}(?:[:.]\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)(?![\w])"
    r"|\b\d{1,2}:\d{2}\b"
    r"|\b(?:noon|midday|midnight)\b"
    rf"|\b(?:\d{{1,2}}|{_WORDNUM})\s+o['’]clock\b"
    rf"|\b(?:half|quarter)\s+(?:past|to)\s+(?:\d{{1,2}}|{_WORDNUM})\b",
    re.IGNORECASE)
_COLOUR = re.compile(
    rf"\b(?:(?:{'|'.join(COLOUR_MODIFIERS)})[\s-]+)?(?:{'|'.join(COLOURS)})"
    rf"(?:(?:\s+and\s+|\s+or\s+|[\s-]+)(?:{'|'.join(COLOURS)}))?\b",
    re.IGNORECASE)
_OCC = "|".join(sorted(OCCUPATIONS, key=len, reverse=True))
_NP_WORD = r"[\w()'’\-]+"
_OCCUPATION = (
    # "works as a nurse", "a job as a financial analyst"
    re.compile(rf"\b(?:works?|working|worked|employed|jobs?|careers?|positions?|roles?|"
               rf"profession|hired|started|starting|trained|training|qualified)\s+as\s+"
               rf"(?:an?\s+|the\s+)?((?:{_NP_WORD}\s+){{0,3}}?{_NP_WORD})"
               r"(?=\s*(?:[.,;:!?]|$|\s+(?:at|in|for|with|and|but|since|because|who|which|"
               r"when|while|so|on|from)\b))", re.IGNORECASE),
    # "is an intensive care (ICU) nurse", "a software developer"
    # (ending its phrase: "the farmers market" names no job)
    re.compile(rf"\b(?:an?|the|as)\s+((?:{_NP_WORD}\s+){{0,3}}?(?:{_OCC})(?:e?s)?)\b"
               r"(?=\s*(?:[.,;:!?)]|$|\s+(?:at|in|for|with|and|but|or|who|which|since|from|on|"
               r"of|now|too|there|here|today|these|this|by|working|full-time|part-time)\b))",
               re.IGNORECASE),
    # "a new job at a robotics startup", "works for the council"
    re.compile(r"\b((?:jobs?|works?|working|worked|employed|internship|interning)\s+(?:at|for|"
               rf"with)\s+(?:an?\s+|the\s+)?(?:{_NP_WORD}\s+){{0,3}}?{_NP_WORD})"
               r"(?=\s*(?:[.,;:!?]|$|\s+(?:in|and|but|since|as|because|on|from|who|which)\b))",
               re.IGNORECASE),
)
_STOP_HEAD = frozenset("well much long soon far usual always ever result part way".split())


def _unit_pattern(unit: str) -> frozenset[str]:
    """Stems that name ``unit`` ("kid" for "child", members of a category)."""
    same = {unit}
    for family in UNIT_SYNONYMS:
        stems = {lexical.stem(w) for w in family}
        if unit in stems:
            same |= stems
    for category, members in vocab.CATEGORY_MEMBERS.items():
        if lexical.stem(category) == unit:
            same |= {lexical.stem(m) for m in members}
    return frozenset(same)


_TOKEN = re.compile(r"[\w'’\-]+|[^\w\s]")
#: Words that may stand between a number and what it counts ("three more days").
_BETWEEN = frozenset("more whole full extra other different new old of".split())
_BREAK = frozenset(".,;:!?()")


def _quantity(unit: str, text: str) -> str | None:
    """The number ``text`` gives of ``unit`` ("Twelve hives" -> "Twelve"), with its unit
    when that is a unit of time ("five days"): never a number of something else."""
    names = _unit_pattern(unit)
    for m in _NUMBER_RE.finditer(text):
        after = _TOKEN.findall(text[m.end():m.end() + 60])
        for k, tok in enumerate(after[:4]):
            if tok in _BREAK or (_NUMBER_RE.fullmatch(tok) and k) or (
                    lexical.is_stop(tok) and tok.lower() not in _BETWEEN):
                break  # "1500 euros for five days" is not 1500 days
            if lexical.stem(tok) in names:
                number = m.group(0)
                if unit in _TIME_UNITS or unit in _MEASURE_STEMS:
                    return " ".join([number, *after[:k + 1]])
                return number
            if lexical.stem(tok) in _TIME_UNITS and unit not in _TIME_UNITS:
                break  # "three days of hiking" is not three hikes
    return None


def _measure(dimension: str | None, text: str) -> str | None:
    units = DIMENSION_UNITS.get(dimension or "any") or [u for us in DIMENSION_UNITS.values()
                                                         for u in us]
    pattern = _measure_re(tuple(units))
    m = pattern.search(text)
    return m.group(0).strip() if m else None


@lru_cache(maxsize=16)
def _measure_re(units: tuple[str, ...]) -> re.Pattern[str]:
    alts = "|".join(sorted(units, key=len, reverse=True))
    return re.compile(rf"(?<![\w.]){_APPROX}{NUMBER}\s*(?:{alts})(?![\w])", re.IGNORECASE)


def _occupation(text: str) -> str | None:
    for i, pattern in enumerate(_OCCUPATION):
        for m in pattern.finditer(text):
            span = m.group(1).strip(" ,.;:()")
            head = span.split()[-1].lower() if span.split() else ""
            if not span or head in _STOP_HEAD or lexical.is_filler(head):
                continue
            if i == 0 and not (set(span.lower().split()) & OCCUPATIONS) and \
                    head.endswith(("ing", "ly")):
                continue
            return span
    return None


@memo(65536)
def find(expect: Expect, text: str) -> str | None:
    """The first value of the expected kind in ``text`` (as written), or None."""
    kind = expect.kind
    if kind == "quantity":
        return _quantity(expect.unit or "", text)
    if kind == "measure":
        return _measure(expect.unit, text)
    if kind == "occupation":
        return _occupation(text)
    pattern = {"age": _AGE, "distance": _DISTANCE, "frequency": _FREQUENCY, "times": _TIMES,
               "clock": _CLOCK, "colour": _COLOUR, "duration": _DURATION}[kind]
    m = pattern.search(text)
    if m is None:
        return None
    value = m.group(0).strip()
    return _AGE_LEAD.sub("", value) if kind == "age" else value


_AGE_LEAD = re.compile(r"^(?:turn(?:s|ed|ing)?|aged?)\s+", re.IGNORECASE)


def holds(expect: Expect, text: str) -> bool:
    """Does ``text`` hold a value of the expected kind?"""
    return find(expect, text) is not None
