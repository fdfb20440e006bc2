"""One vocabulary of numbers, durations and time words for every rule that reads text.

The extractive builder (dates it resolves at ingest), the controller (what
kind of line answers "how many" or "how long") and the extractive answer
(which span to quote) all ask the same questions of a sentence: is there a
count, a duration, a time word? They read them from here, so a word added
here ("thrice", "a couple of") is understood the same way everywhere.
"""

from __future__ import annotations

import re

#: Number words up to twelve, by value (chat rarely spells out larger ones).
NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}
#: Counts without a number, read as a rough value; also what makes a date vague.
VAGUE_COUNTS: dict[str, int] = {"couple": 2, "few": 3, "several": 3}
#: Count words that are not quantities of a unit ("twice", "a dozen").
OTHER_COUNTS: tuple[str, ...] = ("twenty", "dozen", "once", "twice", "thrice")
#: Units a duration is measured in.
DURATION_UNITS: tuple[str, ...] = ("year", "month", "week", "day", "hour", "minute", "second",
                                   "decade")
#: Hedges that may open a duration ("about two years").
APPROXIMATELY: tuple[str, ...] = ("about", "around", "almost", "nearly", "over")

MONTHS: tuple[str, ...] = ("January", "February", "March", "April", "May", "June", "July",
                           "August", "September", "October", "November", "December")
WEEKDAYS: tuple[str, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday",
                             "saturday", "sunday")
SEASONS: tuple[str, ...] = ("spring", "summer", "fall", "autumn", "winter")

#: Calendar units as words ("week", "years"): content in a question ("last year").
TIME_UNIT_WORDS: frozenset[str] = frozenset(
    "week weeks weekend month months year years day days".split())
#: Words that place a unit in time ("last week", "two days ago").
TIME_SHIFT_WORDS: frozenset[str] = frozenset({"last", "next", "ago"})
#: Days named relative to now, and vague recency.
DEICTIC_TIME_WORDS: frozenset[str] = frozenset(
    "today tonight tomorrow yesterday recently lately".split())
#: Every time word that is not a date by itself: noise in an answer that is not a date.
TIME_WORDS: frozenset[str] = (
    TIME_UNIT_WORDS | TIME_SHIFT_WORDS | DEICTIC_TIME_WORDS
    | {"morning", "evening", "night"} | frozenset(WEEKDAYS) | {"fri", "sat", "sun"})

#: Words people are named by in relation to someone ("my sister", "Ana's coach").
RELATIONS: tuple[str, ...] = (
    "mom", "mother", "dad", "father", "parent", "parents", "sister", "brother", "sibling",
    "siblings", "son", "daughter", "kid", "kids", "child", "children", "husband", "wife",
    "partner", "boyfriend", "girlfriend", "fiance", "fiancee", "friend", "aunt", "uncle",
    "cousin", "niece", "nephew", "grandma", "grandmother", "grandpa", "grandfather", "mentor",
    "teacher", "coach", "boss", "colleague", "coworker", "neighbor", "neighbour", "roommate")
#: What may stand between a possessive and a relation ("my *older* sister").
RELATION_MODIFIERS: tuple[str, ...] = ("best", "close", "old", "little", "older", "younger",
                                       "big", "baby", "twin", "new")

#: Irregular past forms and participles ("went", "taken"): never conjugated as present verbs.
PAST_FORMS: frozenset[str] = frozenset(
    """went gone did done made bought took taken saw seen gave given got gotten ran swam began
    begun wrote written met felt kept left lost won found thought taught brought sang sung drew
    drawn built spent told said heard knew known came ate eaten flew rode had was were been
    became sent paid sold fell fallen chose chosen forgot forgotten held led meant slept stood
    understood woke wore broke broken spoke spoken caught fought grew grown threw thrown sat lay
    lit dug hung shot sought stuck swung spun bit hid slid fed fled dealt dreamt leapt lent bent
    wept swept crept knelt""".split())

_NUMBERS = "|".join(NUMBER_WORDS)
_UNITS = "|".join(f"{u}s?" for u in DURATION_UNITS)

#: A quantity of something as chat writes it: digits, a number word, "a few", "a couple of".
QUANTITY = (rf"(?:\d+(?:\s*[-–]\s*\d+)?|{_NUMBERS}|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few"
            r"|several)")
#: A count anywhere in a sentence ("three", "twice", "a few").
COUNT = re.compile(
    rf"\b(?:\d+|{_NUMBERS}|{'|'.join(OTHER_COUNTS)}|(?:a\s+)?couple|several|(?:a\s+)?few)\b",
    re.IGNORECASE)
#: A stretch of time ("about two years", "a few weeks ago", "an hour"); not a frequency
#: ("three times a week", "once a month", "twice per day" say how often, not how long).
DURATION = re.compile(
    r"(?<!times\s)(?<!time\s)(?<!once\s)(?<!twice\s)(?<!thrice\s)(?<!per\s)(?<!every\s)"
    rf"\b(?:(?:{'|'.join(APPROXIMATELY)})\s+)?(?:{QUANTITY}|an?)\s+(?:{_UNITS})(?:\s+ago)?\b",
    re.IGNORECASE)

#: Currencies, as symbols and as the words chat writes them in.
CURRENCY_WORDS: tuple[str, ...] = (
    "euros?", "eur", "dollars?", "usd", "bucks", "pounds?", "gbp", "quid", "francs?", "yen",
    "yuan", "rupees?", "pesos?", "reais", "crowns?", "kronor", "krona", "cents?")
#: A sum of money: "$1,500", "1500 euros", "€20", "two hundred dollars", "1.5k USD".
AMOUNT = re.compile(
    r"[$€£¥]\s?\d[\d,.]*(?:\s?(?:k|m|million|thousand|hundred))?"
    rf"|\b(?:\d[\d,.]*\s?(?:k|m)?|{_NUMBERS}|a|one)(?:\s+(?:hundred|thousand|million))?\s+"
    rf"(?:{'|'.join(CURRENCY_WORDS)})\b",
    re.IGNORECASE)
#: Question words that ask about money: a line holding an amount covers them.
MONEY_WORDS: frozenset[str] = frozenset(
    "money budget budgets budgeted cost costs price prices spend spent pay paid afford "
    "expensive cheap salary earn earned save saved savings fee fees rent".split())

#: Words one question may use for what the conversation says another way ("travel" for a
#: "trip"). Kept to near-synonyms: a family is one meaning, not a topic.
SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "travel travels travelled traveled traveling travelling trip trips journey vacation "
    "holiday holidays",
    "job jobs career careers",
    "language languages",
))

#: Members a category noun in a question stands for: "which languages" is covered, and
#: answered, by "C++ and Rust". Small on purpose: common chat categories only.
CATEGORY_MEMBERS: dict[str, frozenset[str]] = {
    "language": frozenset(
        """c++ c# rust python java javascript typescript golang kotlin php
        scala haskell ocaml elixir erlang matlab perl lua sql zig fortran cobol
        english spanish french german italian portuguese dutch swedish norwegian danish
        finnish polish russian ukrainian czech greek turkish arabic hebrew hindi bengali
        urdu chinese mandarin cantonese japanese korean vietnamese thai indonesian
        swahili""".split()),
    "instrument": frozenset(
        """piano guitar violin cello viola drums drum flute clarinet saxophone sax trumpet
        trombone ukulele bass harp banjo accordion harmonica keyboard""".split()),
    "pet": frozenset(
        """cat cats dog dogs kitten puppy hamster rabbit parrot fish turtle guinea
        snake lizard horse""".split()),
    "sport": frozenset(
        """football soccer basketball tennis baseball volleyball hockey golf rugby cricket
        swimming running cycling climbing skiing snowboarding surfing boxing yoga badminton
        squash""".split()),
}
