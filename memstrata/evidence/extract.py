"""Short answers cut from one line of evidence, by the kind of answer asked for.

The offline answer cannot paraphrase, so it quotes: the date for "when", the
number for "how many", the name for "who", a quoted title when there is one,
and otherwise the stretch of the sentence that the question did not already
contain, preferring the stretch right after the words it matched ("Nate made
*vegan ice cream* and shared it"). Short spans are what a reader wants, and
what token-F1 rewards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from memstrata.evidence import answer_types, lexical
from memstrata.evidence.cues import Cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.type_lexicon import OCCUPATIONS
from memstrata.text import vocab
from memstrata.evidence.relevance import members
from memstrata.text.dates import find_relative_dates

#: What an abstaining answer says (LoCoMo's scorer looks for "not mentioned").
ABSTAIN_TEXT = "Not mentioned in the conversation"

_MONTHS = vocab.MONTHS
_MONTH_NAMES = "|".join(_MONTHS)
# Alone, "May" is far more often the verb than the month.
_MONTH_NAMES_NOT_MAY = "|".join(m for m in _MONTHS if m != "May")
_ANNOTATION = re.compile(
    r"\((around )?(?:(the week of|the weekend of) )?(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?\)"
    r"|\((around )?(spring|summer|fall|winter) (\d{4})\)"
)
_EXPLICIT_DATE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTH_NAMES})(?:,?\s+\d{{4}})?"
    rf"|(?:{_MONTH_NAMES_NOT_MAY})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+\d{{4}})?"
    r"|(?:19|20)\d\d)\b"
)
_RELATION = re.compile(
    r"\b(?:((?i:my|our|his|her|their)|[A-Z][a-z]+'s)\s+)((?:best\s+|close\s+|old\s+|little\s+|"
    r"older\s+|younger\s+)?(?:mom|mother|dad|father|parents?|sister|brother|siblings?|son|"
    r"daughter|kids?|children|husband|wife|partner|boyfriend|girlfriend|friends?|aunt|uncle|"
    r"cousin|grandma|grandmother|grandpa|grandfather|mentor|teacher|coach|boss|colleague|"
    r"neighbou?r|team(?:mates?)?|family))\b"
)
_PLACE_PREP = re.compile(r"\b(?:in|at|to|from|near|around)\s+(?:the\s+)?"
                         r"((?:[A-Z][\w'\-]+)(?:\s+(?:of\s+)?[A-Z][\w'\-]+)*)")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_NEGATION = re.compile(r"\b(?:not|never|no|nobody|nothing|neither|nor)\b|n't\b", re.IGNORECASE)
_CAPTION = re.compile(r"\[[^\]]*\]")
_ANNOTATION_ANY = re.compile(r"\s*\((?:around )?(?:the week(?:end)? of )?[\w -]*\d{4}[\w-]*\)")
_TOKEN = re.compile(r"\S+")
_CUT_AFTER = re.compile(r"[.;:!?]$|[,)]$")
_HARD_CUT = frozenset({"but", "because", "which", "who", "so", "while", "although", "though",
                       "when", "if", "that's", "it's"})
_TITLE_ASK = re.compile(r"\b(?:book|books|song|songs|movie|movies|film|films|show|title|name|"
                        r"called|album|novel|band|game|quote|sign|saying|poem)\b", re.IGNORECASE)
_MAX_SPAN_WORDS = 8


def format_day(d: date) -> str:
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _format_annotation(m: re.Match[str]) -> str:
    if m.group(7):  # season
        around = "around " if m.group(6) else ""
        return f"{around}{m.group(7)} {m.group(8)}"
    around = "around " if m.group(1) else ""
    which, year, month, day = m.group(2), m.group(3), m.group(4), m.group(5)
    if month and day:
        text = format_day(date(int(year), int(month), int(day)))
        return f"{around}{which + ' ' if which else ''}{text}"
    if month:
        return f"{around}{_MONTHS[int(month) - 1]} {year}"
    return f"{around}{year}"


def date_of(line: EvidenceLine) -> tuple[str, str]:
    """(answer, how) for a "when" question: a resolved phrase, a written date, or the session's.

    ``how`` is "resolved", "written" or "session".
    """
    text = line.text
    m = _ANNOTATION.search(text)
    if m:
        relative = _relative_form(text[: m.start()], line.session_date)
        return relative or _format_annotation(m), "resolved"
    if line.session_date is not None:
        found = find_relative_dates(text, line.session_date)
        if found:
            relative = _relative_form(text[: found[0].end], line.session_date)
            pm = _ANNOTATION.search(f"({found[0].label})")
            if relative or pm:
                return relative or _format_annotation(pm), "resolved"  # type: ignore[arg-type]
    for found_phrase in _RELATIVE_ANYWHERE.finditer(text):
        relative = _relative_form(text[: found_phrase.end()], line.session_date)
        if relative:
            return relative, "resolved"
    m2 = _EXPLICIT_DATE.search(_CAPTION.sub("", text))
    if m2:
        return m2.group(0), "written"
    if line.session_date is not None:
        return format_day(line.session_date.date()), "session"
    return "", "none"


_RELATIVE_PHRASE = re.compile(
    r"\b(?:(?:last|this\s+past|past)\s+(week|weekend|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|fri|sat|sun|mon|tues?|wed|thurs?)"
    r"|(a\s+few|a\s+couple\s+of|couple\s+of|few|several|two|three|four|five|\d+)\s+"
    r"(weeks|weekends)\s+ago)\s*$",
    re.IGNORECASE,
)
_RELATIVE_ANYWHERE = re.compile(_RELATIVE_PHRASE.pattern.replace(r"\s*$", r"\b"),
                                re.IGNORECASE)
_DAY_NAMES = {"fri": "Friday", "sat": "Saturday", "sun": "Sunday", "mon": "Monday",
              "tue": "Tuesday", "tues": "Tuesday", "wed": "Wednesday", "thu": "Thursday",
              "thur": "Thursday", "thurs": "Thursday"}


def _relative_form(before: str, session_date: datetime | None) -> str | None:
    """"the week before 9 June 2023" for "last week" said on that day.

    Weeks, weekends and weekdays are kept relative to the session date, the
    way the speaker framed them: "last Friday" names a day only by its
    distance from when it was said, and a calendar week has no short name.
    """
    if session_date is None:
        return None
    m = _RELATIVE_PHRASE.search(before)
    if not m:
        return None
    day = format_day(session_date.date())
    if m.group(1):
        unit = m.group(1).lower()
        if unit in ("week", "weekend"):
            return f"the {unit} before {day}"
        return f"the {_DAY_NAMES.get(unit, unit.capitalize())} before {day}"
    return f"{m.group(2).lower()} {m.group(3).lower()} before {day}"


def clean(text: str, keep_captions: bool = False) -> str:
    """The sentence without date annotations, image captions (unless wanted) and edge noise."""
    text = _ANNOTATION_ANY.sub("", text)
    if not keep_captions:
        stripped = _CAPTION.sub("", text)
        text = stripped if stripped.strip() else text.strip("[]")
    return " ".join(text.split()).strip(" ,.;:!?-")


def _bare(token: str) -> str:
    return token.strip(",.;:!?\"'“”‘’()[]")


#: Time words: part of a date answer, noise in any other.
_TIME_WORDS = vocab.TIME_WORDS


def _noise(word: str) -> bool:
    bare = _bare(word)
    return not bare or lexical.is_filler(bare) or bare.lower() in _TIME_WORDS


def _trim(words: list[str]) -> list[str]:
    while words and _noise(words[0]):
        words = words[1:]
    while words and _noise(words[-1]):
        words = words[:-1]
    return words


@dataclass(frozen=True, slots=True)
class _Run:
    words: list[str]
    after_match: bool
    before_match: bool
    start: int


def _runs(qterms: set[str], asked_names: set[str], tokens: list[str]) -> list[_Run]:
    """Stretches of the sentence between the question's words, cut at clause boundaries."""
    runs: list[_Run] = []
    cur: list[str] = []
    start = 0
    prev_match = False
    for i, tok in enumerate(tokens):
        bare = _bare(tok)
        matched = bool(bare) and (lexical.stem(bare) in qterms or bare.lower() in asked_names)
        if matched or bare.lower() in _HARD_CUT:
            if cur:
                runs.append(_Run(cur, prev_match, matched, start))
            cur, start = [], i + 1
            prev_match = matched
            continue
        if not cur:
            start = i
        cur.append(tok)
        if _CUT_AFTER.search(tok):
            runs.append(_Run(cur, prev_match, False, start))
            cur, start, prev_match = [], i + 1, False
    if cur:
        runs.append(_Run(cur, prev_match, False, start))
    return runs


def novel_span(cues: Cues, text: str, max_words: int = _MAX_SPAN_WORDS) -> str:
    """The best stretch of ``text`` that the question does not already contain.

    Stretches right after a matched word are preferred (answers follow the
    verb or preposition the question shares with the sentence), then ones
    with names, numbers or quotes; long ones are clipped.
    """
    tokens = _TOKEN.findall(text)
    if not tokens:
        return ""
    qterms = set(cues.terms)
    asked = {n.lower() for n in cues.names} | {n.split()[0].lower() for n in cues.subjects}
    best: tuple[float, int] | None = None
    best_words: list[str] = []
    for run in _runs(qterms, asked, tokens):
        words = _trim(run.words)
        content = [w for w in words if not _noise(w)]
        if not content:
            continue
        score = 0.0
        score += 0.5 if run.after_match else 0.0
        score += 0.4 if run.before_match else 0.0
        score += 0.3 * min(len(content), 3)
        if any(w[:1].isupper() for w in content[1:]) or (content and content[0][:1].isupper()
                                                         and run.start > 0):
            score += 0.3
        if any(any(c.isdigit() for c in w) for w in content):
            score += 0.2
        score -= 0.08 * max(0, len(words) - 6)
        key = (score, -run.start)
        if best is None or key > best:
            best, best_words = key, words
    return " ".join(best_words[:max_words]).strip(" ,.;:!?\"'“”")


def _asked(cues: Cues) -> set[str]:
    """Names that cannot be the answer: those in the question, and the participants."""
    return ({n.lower() for n in cues.names} | {p.lower() for p in cues.participants}
            | {p.split()[0].lower() for p in cues.participants if p.split()})


_NAMING = re.compile(r"\b(?:named|called)\s+$", re.IGNORECASE)


def _named(cues: Cues, text: str, people_only: bool = False) -> str | None:
    """The first name in ``text`` that the question does not already hold ("Pixel").

    ``people_only`` skips names a thing is given ("a cat named Sardinha"): asked
    "who", the answer is not the cat.
    """
    asked = _asked(cues)
    found = [n for n in lexical.names(text) if n.lower() not in asked
             and n.split()[0].lower() not in asked and not _exclamation(n, text)]
    if people_only:
        found = [n for n in found
                 if not any(_NAMING.search(text[:m.start()]) for m in
                            re.finditer(rf"\b{re.escape(n)}\b", text))]
    return found[0] if found else None


def _exclamation(name: str, text: str) -> bool:
    """"Congrats, Tim!", "Oof.", "Hoping to": one capitalised word opening a sentence and
    closed by a mark, or an -ing/-ly word there, is an interjection or a verb, not a name."""
    if " " in name:
        return False
    if name.lower() in vocab.NUMBER_WORDS:  # "Nine days is plenty": a number, not a name
        return True
    opens = re.search(rf"(?:^|[.!?]\s+){re.escape(name)}\b", text) is not None
    # "Hoping to ...", "Finally, ...": a verb or adverb opening the sentence.
    return opens and (name.lower().endswith(("ing", "ly")) or re.search(
        rf"(?:^|[.!?]\s+){re.escape(name)}\s*[,.!?]", text) is not None)


def _named_person(cues: Cues, text: str) -> str | None:
    """A name "who" may be answered with: not one the question holds, nor the name of a
    thing ("a cat named Sardinha"); a participant the question does not name may be."""
    asked = {n.lower() for n in cues.names} | {n.split()[0].lower() for n in cues.names
                                               if n.split()}
    for n in lexical.names(text):
        if n.lower() in asked or n.split()[0].lower() in asked or n in ("User", "Assistant") \
                or _exclamation(n, text):
            continue
        if any(_NAMING.search(text[:m.start()]) for m in re.finditer(rf"\b{re.escape(n)}\b",
                                                                      text)):
            continue
        return n
    return None


_PEOPLE_NOUNS = "|".join(sorted(
    {*vocab.RELATIONS, *OCCUPATIONS, *"""organization organisation charity group team teammates
    club company community friends colleagues coworkers classmates neighbors neighbours
    volunteers people folks mentors doctors nurses staff crew band choir class""".split()},
    key=len, reverse=True))
_GROUP = re.compile(rf"\b(?:an?|the|my|his|her|their|our|some|some\s+of\s+(?:my|his|her|"
                    rf"their|our))\s+(?:[\w\-]+\s+){{0,2}}?(?:{_PEOPLE_NOUNS})\b",
                    re.IGNORECASE)


_TITLED = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|Professor|Doctor)\.?\s+([A-Z][\w'\-]+)")


def _person(cues: Cues, line: EvidenceLine, text: str) -> tuple[str, str] | None:
    """(who, kind): a name or a named relation ("person"), people described by what they
    are ("a local organization": "person:group"), or a participant the question does not
    name ("person:participant"), in that order of trust."""
    asked = {n.lower() for n in cues.names}
    for _, name in lexical.kin(text):
        # "my sister Inês": the evidence names the relation, so the name is the answer.
        if name.lower() not in _asked(cues):
            return name, "person"
    rel = _RELATION.search(text)
    if rel:
        owner = rel.group(1)
        if owner.lower() in ("my", "our") and line.speaker:
            owner = f"{line.speaker}'s"
        if owner.lower().rstrip("'s") not in asked or owner.endswith("'s"):
            return f"{owner} {rel.group(2)}", "person"
    titled = _TITLED.search(text)
    if titled and titled.group(1).lower() not in _asked(cues):
        return titled.group(0), "person"
    named = _named(cues, text, people_only=True)
    if named:
        return named, "person"
    for group in _GROUP.finditer(text):
        # "Who is my dentist?" is not answered by "my dentist".
        if lexical.stem(group.group(0).split()[-1]) not in cues.terms:
            return group.group(0), "person:group"
    named = _named_person(cues, text)
    return (named, "person:participant") if named else None


def _when_word(name: str) -> bool:
    """"Last Friday", "May": a capitalised time, not a place."""
    first = name.split()[0].lower()
    return first in _TIME_WORDS or name.split()[0] in _MONTHS


_LOCATIVE = re.compile(
    r"\b((?:in|at|on|under|inside|behind|near|beside|by|from|into|outside|above|below|"
    r"next\s+to|on\s+top\s+of)\s+(?:the|my|his|her|our|their|your|a|an|User['’]s|"
    r"[A-Z][\w\-]+['’]s)\s+(?:[\w'’\-]+\s+){0,4}?([\w'’\-]+))"
    r"(?=\s*(?:[.,;:!?)]|$|\s+(?:and|but|because|so|when|while|since|to|for|with|every|each|"
    r"before|after|until|now|today|yesterday|last|this|next)\b))")
_PLACE_WORD = re.compile(r"\b(?:at|from)\s+(?:home|work|school|church|college|uni|university)\b"
                         r"|\b(?:downtown|abroad|upstairs|downstairs|overseas)\b")
#: Heads of a prepositional phrase that is not a place ("in the morning", "at the moment").
_NOT_PLACE = vocab.TIME_WORDS | frozenset(
    """moment end beginning start past future meantime way mood least most first process case
    order time times while life lives middle run long rest hope line mind love touch general
    particular person fact advance addition charge favour favor own turn shape need total
    hand hands mean course chance idea end afternoon evening night season meantime age ages
    years months weeks days hours minutes point side team family""".split())


def _locative(text: str) -> str | None:
    """"in the top drawer of my desk": a place said without a capitalised name."""
    for m in _LOCATIVE.finditer(text):
        head = m.group(2).lower().strip("'’")
        if head in _NOT_PLACE or any(c.isdigit() for c in head) or _when_word(m.group(2)):
            continue
        return m.group(1)
    m2 = _PLACE_WORD.search(text)
    return m2.group(0) if m2 else None


def _place(cues: Cues, text: str) -> str | None:
    asked = _asked(cues)
    for m in _PLACE_PREP.finditer(text):
        if m.group(1).lower() not in asked and not _when_word(m.group(1)) and \
                re.sub(r"['’]s$", "", m.group(1).split()[0]) not in ("User", "Assistant"):
            return m.group(1)
    found = [n for n in lexical.names(text) if n.lower() not in asked
             and n.split()[0].lower() not in asked and not _when_word(n)
             and n not in ("User", "Assistant") and not _exclamation(n, text)]
    return found[0] if found else None


_CLAUSES = re.compile(r",?\s+(?:but|while|whereas)\s+|;\s*", re.IGNORECASE)
_FIRST_PERSON_ASK = re.compile(r"\b(?:I|me|my|mine|myself)\b")
_SELF = frozenset({"user", "i"})


def _about_someone_else(cues: Cues, text: str) -> bool:
    """A question about "I" whose words the line states of another named person.

    "Do I eat fish?" against "I'm vegetarian, but Inês eats fish": the clause
    that holds "fish" has Inês for its subject, so it does not say that I do.
    """
    if not _FIRST_PERSON_ASK.search(cues.question):
        return False
    q = set(cues.terms)
    clauses = _CLAUSES.split(text)
    if len(clauses) < 2:
        return False
    best = max(clauses, key=lambda c: len(q & lexical.term_set(c)))
    if not q & lexical.term_set(best):
        return False
    first = best.split()[0] if best.split() else ""
    names = lexical.names(best)
    return bool(names) and first.strip(",.") == names[0].split()[0] and \
        names[0].lower() not in _SELF


def span_for(cues: Cues, line: EvidenceLine, max_words: int = _MAX_SPAN_WORDS,
             ) -> tuple[str, str]:
    """(short answer, kind) cut from ``line`` for the question's answer type.

    A question of a finer kind ("how old", "how many days") gets a value of that
    kind, with the kind's name; without one, the generic cut below (whose kind
    then tells the caller that the line does not answer it).
    """
    kind = cues.answer_type
    expects = cues.expects
    if expects is not None and expects.kind in answer_types.KINDS:
        value = answer_types.find(expects, clean(line.text))
        if value:
            return value, expects.kind
    if kind == "date":
        answer, how = date_of(line)
        return answer, f"date:{how}"
    keep_captions = bool(re.search(r"\b(?:photo|picture|image|pic)\b", cues.question, re.I))
    text = clean(line.text, keep_captions)
    if cues.category:
        found = members(cues.category, text)
        if found:
            return (found[0] if len(found) == 1 else
                    ", ".join(found[:-1]) + " and " + found[-1]), "members"
    if kind == "amount":
        m = vocab.AMOUNT.search(text)
        if m:
            return m.group(0), "amount"
    if kind == "duration":
        m = vocab.DURATION.search(text)
        if m:
            return m.group(0), "duration"
    if kind == "count":
        m = vocab.COUNT.search(text)
        if m:
            return m.group(0), "count"
    if kind == "person":
        who = _person(cues, line, text)
        if who:
            return who
    if kind == "place":
        where = _place(cues, text)
        if where:
            return where, "place"
        where = _locative(text)
        if where:
            return where, "place:common"
    if kind == "yesno":
        if _about_someone_else(cues, text):
            return "No", "yesno"
        return ("No" if _NEGATION.search(text) else "Yes"), "yesno"
    if _TITLE_ASK.search(cues.question):
        q = _QUOTED.search(text)
        if q:
            return q.group(1).strip(), "title"
        name = _named(cues, text)
        if name:
            return name, "title"
    span = novel_span(cues, text, max_words)
    return (span or text), "span"
