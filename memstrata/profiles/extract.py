"""Rules that read one session's turns into mentions, alias links and facts (no LLM).

The output is a pure function of the session's turns and date: a session
appended turn by turn, ingested whole or streamed extracts the same
occurrences, and nothing here reads another session (pronouns resolve only
inside the session, within :data:`WINDOW_TURNS` turns).

What is read, per clause:

* who it is about: ``I``/``we`` (the message's author), ``you`` (the other
  participant), "my sister" / "my sister Inês" / "Inês" / "Inês's",
  ``she``/``he`` when one person of that gender (or unknown gender) was
  mentioned in the window;
* what is said of them: diet, age, job, workplace, home (and moves), hometown,
  likes and dislikes, what they eat, favourites, pets and possessions, habits,
  who looks after whom, recommendations, dated events and plans.

The assistant is a participant like the user: what it says or recommends is
attributed to ``assistant``, never to the user.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from memstrata.model import Message, SessionMeta, Turn
from memstrata.profiles.lexicon import (
    ACTIVITIES,
    COMPOUND_RELATIONS,
    DIETS,
    HOBBY_NOUNS,
    JOBS,
    NOT_PASTIMES,
    NOT_EVENTS,
    PERSON_RELATIONS,
    PET_SPECIES,
    PLACE_HEADS,
    POSSESSIONS,
)
from memstrata.profiles.model import (
    PARTICIPANTS,
    Fact,
    Link,
    Mention,
    SessionExtract,
    Source,
    fold,
    is_participant,
    name_key,
    rel_key,
)
from memstrata.profiles.text import NameSpan, clauses, clip_words, names, normalise, noun_phrase
from memstrata.text.dates import ResolvedDate, find_relative_dates
from memstrata.text.sentences import split_sentences
from memstrata.text.vocab import PAST_FORMS

#: A pronoun resolves to a person mentioned in this many turns (the current one included).
WINDOW_TURNS = 3
#: The longest event or plan text kept, in words.
EVENT_WORDS = 16

_MARKERS = re.compile(
    r"^(?:(?:also|and|so|then|well|oh|actually|but|plus|anyway|yeah|yes|no|now|btw|honestly|"
    r"lately|recently|finally|today|yesterday|tonight|great|nice|ok|okay|sure|haha|lol|wow|ah|"
    r"hmm|because|though|although|luckily|sadly|unfortunately|fortunately|guess what)"
    r"\b[,!.]?\s+)+", re.IGNORECASE)
_AUX = re.compile(
    r"^((?:(?:am|is|are|was|were|will|would|shall|have|has|had|been|be|being|do|does|did|not|"
    r"never|no longer|also|still|really|just|now|always|already|finally|currently|recently|"
    r"actually|absolutely|totally|so|even|usually|often|sometimes|definitely|both|all|mostly|"
    r"only|officially|basically|literally|gonna|going to|kind of|pretty much)\s+)*)",
    re.IGNORECASE)
_BE = re.compile(r"\b(?:am|is|are|was|were|been|be)\b")
_FUTURE_AUX = re.compile(r"\b(?:will|shall|gonna|going to)\b")
_NEGATION = re.compile(r"\b(?:not|never|no longer)\b")
_REL = re.compile(
    r"\b(my|our|your)\s+((?:best|little|younger|older|big|close|old|childhood|new)\s+)?"
    r"([a-z][a-z\-]*(?:\s+pig)?)\b", re.IGNORECASE)
_SPECIES = "|".join(sorted((re.escape(s) for s in PET_SPECIES), key=len, reverse=True))
_PET = re.compile(
    r"\b(?:have|has|had|got|get|adopted|adopt|adopting|bought|rescued|own|owns|getting)\s+"
    r"(?:a|an|another|two|three|\d+)\s+(?:(?:new|little|young|cute|rescue|rescued|sweet)\s+)*"
    rf"({_SPECIES})\b(\s*,\s*|\s+(?:named|called)\s+)?", re.IGNORECASE)
_OWN = re.compile(
    r"\b(?:bought|got|have|has|own|owns|purchased)\s+(a|an)\s+((?:new|used|old|second-hand)\s+)?"
    rf"((?:[a-z]+\s+)?(?:{'|'.join(sorted(POSSESSIONS))}))\b", re.IGNORECASE)
_FAVOURITE = re.compile(
    r"^(?:(my|our|your|her|his)\s+|(.+?)'s\s+)favou?rite\s+([a-z]+(?:\s[a-z]+)?)\s+"
    r"(?:is|was|are|were|has always been|is now|now is)\s+(.+)$", re.IGNORECASE)
_BEST_THING = re.compile(
    r"^(?:the\s+)?(.+?)\s+(?:was|were|is|are)\s+(?:the|my)\s+(?:best|favou?rite)\s+"
    r"(?:thing|food|meal|dish|part|place|drink)\b.*?\b(?:I|we)\b", re.IGNORECASE)
_POSSESSIVE_ATTR = re.compile(
    r"^\s*(job|work|age|birthday|home|hometown|name|diet|favou?rite food)\s+(?:is|was)\s+(.+)$",
    re.IGNORECASE)
_PRONOUN_OBJECTS = frozenset(
    """it that this them you him her those these me us one ones what how why when where who
    everything anything something nothing all both each everyone everybody""".split())
#: Verbs an infinitive preference may take ("likes to cook"); others ("love to check") skip.
_LIKED_INFINITIVES = ACTIVITIES | frozenset("eat travel cook bake read dance sing".split())
_EVALUATIVE = frozenset(
    """good great perfect nice lovely bit lot big huge little small bad amazing awesome fun
    wonderful beautiful terrible horrible sweet kind real true different new long short
    couple few""".split())

_PLAN_CUE = re.compile(
    r"^(?:planning(?:\s+(?:to|on))?|plan(?:s)?\s+to|want(?:s)?\s+to|hop(?:e|es|ing)\s+to|"
    r"about\s+to|intend(?:s)?\s+to|signed\s+up\s+for|sign(?:ing)?\s+up\s+for|booked|"
    r"registered\s+for|getting|thinking\s+of|considering)\b\s*", re.IGNORECASE)
_DIET = re.compile(
    r"^(?:(?:become|became|gone|went|turned|been|a|an)\s+)*("
    + "|".join(re.escape(d) for d in DIETS) + r")\b", re.IGNORECASE)
_AGE = re.compile(r"^(?:turned\s+|turns\s+|turning\s+|will turn\s+)?(\d{1,3})"
                  r"(?:\s+(?:years?|yrs?)\s+old)?\s*[.!]?\s*$", re.IGNORECASE)
_EATS = re.compile(r"^(eats?|ate|eating)\s+(.+)", re.IGNORECASE)
_LIKE = re.compile(
    r"^(love[sd]?|loving|like[sd]?|enjoy(?:s|ed|ing)?|adore[sd]?|prefer(?:s|red)?|"
    r"(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|into|fond\s+of|obsessed\s+with|crazy\s+about)\s+(.+)",
    re.IGNORECASE)
_DISLIKE = re.compile(
    r"^(hate[sd]?|dislike[sd]?|can not stand|cannot stand|detest(?:s|ed)?)\s+(.+)",
    re.IGNORECASE)
_WORKS_AS = re.compile(
    r"^(?:work(?:s|ed|ing)?|start(?:s|ed|ing)?\s+working)\s+as\s+(?:a\s+|an\s+)?(.+)",
    re.IGNORECASE)
_WORKS_AT = re.compile(
    r"^(?:work(?:s|ed|ing)?|start(?:s|ed|ing)?\s+working|"
    r"start(?:s|ed|ing)?\s+(?:a\s+|my\s+|her\s+|his\s+)?(?:new\s+)?job|"
    r"got\s+(?:a\s+)?(?:new\s+)?job|(?:have|has)\s+(?:a\s+)?new\s+job|joined|employed)\s+"
    r"(?:at|for|with|by)\s+(.+)", re.IGNORECASE)
_A_NOUN = re.compile(r"^(?:a|an)\s+(.+)", re.IGNORECASE)
_LIVES = re.compile(r"^(?:live[sd]?|living)\s+in\s+(.+)", re.IGNORECASE)
_MOVED = re.compile(r"^(?:moved|relocated)\s+(?:back\s+)?(?:to|into)\s+(.+)", re.IGNORECASE)
_MOVING = re.compile(r"^(?:moving|relocating|move|relocate)\s+(?:back\s+)?to\s+(.+)",
                     re.IGNORECASE)
_FROM = re.compile(r"^(?:(?:originally\s+)?from|come[s]?\s+from|came\s+from|grew\s+up\s+in)\s+"
                   r"(.+)", re.IGNORECASE)
_CARE = re.compile(
    r"^(?:look(?:s|ed|ing)?\s+after|take(?:s|n)?\s+care\s+of|took\s+care\s+of|taking\s+care\s+"
    r"of|walk(?:s|ed|ing)?|feed(?:s|ing)?|fed|babysit(?:s|ting)?|babysat|dog-?sit(?:s|ting)?|"
    r"pet-?sit(?:s|ting)?)\s+(.+)", re.IGNORECASE)
_REC_VERB = re.compile(r"^(?:recommended|suggested|recommends|suggests)\b", re.IGNORECASE)
_LEADING_BE = re.compile(r"^(?:(?:am|is|are|was|were|also|still|really|just|now|so)\s+)+",
                         re.IGNORECASE)
#: "went camping", "go hiking", "love going swimming": a pastime (the gerund).
_GO_ING = re.compile(r"\b(?:go|goes|went|gone|going|been\s+going)\s+([a-z]{3,}ing)\b",
                     re.IGNORECASE)
#: "took a pottery class", "signed up for salsa lessons": a pastime (the subject taught).
_CLASS = re.compile(
    r"\b(?:took|take|takes|taking|signed\s+up\s+for|sign\s+up\s+for|joined|join|started|"
    r"start|attended|attend|attending|enrolled\s+in)\s+(?:in\s+)?(?:a|an|my|some|the|our|"
    r"these|those)?\s*(?:new\s+|local\s+|weekly\s+|beginner\s+|beginners\s+)?"
    r"([a-z]+(?:\s[a-z]+)?)\s+(?:class|classes|lesson|lessons|course|courses|workshop|"
    r"workshops)\b", re.IGNORECASE)
#: "my home country, Sweden", "our hometown of Lyon": the speaker's origin, by name.
_HOME_COUNTRY = re.compile(
    r"\b(my|our|your)\s+(?:home\s+country|hometown|home\s+town|native\s+country|"
    r"country\s+of\s+origin)(?:\s*,\s*|\s+of\s+|\s+is\s+|\s+was\s+)"
    r"([A-Z][\w\-]+(?:\s+[A-Z][\w\-]+)?)")
_ING = re.compile(r"^(?:been\s+)?([a-z]+ing)\b(.*)$", re.IGNORECASE)
_VERB_OBJECT = re.compile(r"^([a-z]+)\s+(.+)$", re.IGNORECASE)
_FIRST_WORD = re.compile(r"^([a-z]+)", re.IGNORECASE)


def day_text(value: date) -> str:
    return value.isoformat()


def date_text(r: ResolvedDate) -> str:
    """A resolved date as precise as the phrase: ``2023``, ``2024-05`` or ``2024-05-02``."""
    v = r.value
    if r.granularity == "year":
        return f"{v.year:04d}"
    if r.granularity in ("month", "season"):
        return f"{v.year:04d}-{v.month:02d}"
    return v.isoformat()


@dataclass
class _Seen:
    turn: int
    key: str


@dataclass
class _Session:
    """What the rules remember while reading one session."""

    meta: SessionMeta
    said: str | None
    anchor: datetime | None
    out: SessionExtract
    window: list[_Seen] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    genders: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    #: Multi-word names of this session, for a later short form ("Ramiro").
    long_names: list[tuple[list[str], str]] = field(default_factory=list)
    speakers: set[tuple[str, str]] = field(default_factory=set)
    recommended: set[str] = field(default_factory=set)
    #: Names seen only opening a sentence ("Lunch was late"): no pronoun resolves to them.
    weak: set[str] = field(default_factory=set)
    strong: set[str] = field(default_factory=set)


@dataclass
class _Clause:
    """One clause of one message, with what the sentence around it holds."""

    text: str
    start: int
    end: int
    sentence: str
    names: list[NameSpan]
    dates: list[ResolvedDate]
    relations: dict[int, tuple[str, int]]  # start -> (key, end) of "my sister (Inês)"
    author: str
    other: str
    source: Source
    turn: int


def extract_session(meta: SessionMeta, turns: Sequence[Turn]) -> SessionExtract:
    """Every mention, link and fact the rules find in one session, in turn order."""
    said = meta.session_date.date().isoformat() if meta.session_date else None
    ctx = _Session(meta, said, meta.session_date, SessionExtract(meta.session_id))
    for turn in sorted(turns, key=lambda t: t.index):
        for message in turn.messages:
            _message(ctx, turn.index, message)
    return ctx.out


def _message(ctx: _Session, turn: int, m: Message) -> None:
    author = "user" if m.role == "user" else "assistant"
    other = PARTICIPANTS[1] if author == "user" else PARTICIPANTS[0]
    src = Source(ctx.meta.session_id, turn, (m.source_id,) if m.source_id else ())
    if m.speaker and (author, m.speaker) not in ctx.speakers:
        ctx.speakers.add((author, m.speaker))
        key = name_key(m.speaker)
        ctx.out.links.append(Link(author, key, src))
        ctx.out.mentions.append(Mention(key, m.speaker, src, kind=author))
        ctx.kinds[key] = author
    for raw in split_sentences(m.content):
        sentence = normalise(raw)
        found = _names(ctx, sentence)
        dates = find_relative_dates(sentence, ctx.anchor) if ctx.anchor is not None else []
        relations = _relations(ctx, sentence, found, author, other, src)
        covered = {key for key, _ in relations.values()}
        for span in found:
            key = _key_of(ctx, span)
            ctx.tokens[key] = span.tokens
            if span.initial and key not in ctx.strong:
                ctx.weak.add(key)
            elif not span.initial:
                ctx.strong.add(key)
                ctx.weak.discard(key)
            if key not in covered:
                _mention(ctx, key, span.text, src, span.kind)
        question = sentence.rstrip().endswith("?")
        handled = False
        clause: _Clause | None = None
        for start, end in clauses(sentence, question=question):
            clause = _Clause(sentence[start:end], start, end, sentence, found, dates, relations,
                             author, other, src, turn)
            if not (question and clause.text.rstrip().endswith("?")):
                handled = _clause(ctx, clause) or handled
            _see(ctx, turn, [n for n in found if start <= n.start < end], relations, start, end)
        if clause is not None and not handled and not question \
                and _RECOMMEND_CUE.search(sentence):
            _recommend(ctx, found, author, clause)


# -- names and relations ------------------------------------------------------
def _names(ctx: _Session, sentence: str) -> list[NameSpan]:
    return names(sentence)


def _key_of(ctx: _Session, span: NameSpan) -> str:
    """The key of a name; a short form of a longer name of this session joins that name."""
    words = [fold(w) for w in span.text.split()]
    if len(words) == 1:
        for long_words, key in reversed(ctx.long_names):
            kind = ctx.kinds.get(key)
            if ((kind in ("place", "org") and long_words[0] in PLACE_HEADS
                 and long_words[-1] == words[0])
                    or (kind == "person" and long_words[0] == words[0])):
                return key
    key = name_key(span.text)
    if len(words) > 1 and all(key != k for _, k in ctx.long_names):
        ctx.long_names.append((words, key))
    return key


def _mention(ctx: _Session, key: str, form: str, src: Source, kind: str | None,
             gender: str | None = None, species: str | None = None) -> None:
    if kind is not None and ctx.kinds.get(key) not in ("person", "pet", "user", "assistant"):
        ctx.kinds[key] = kind
    if gender is not None:
        ctx.genders[key] = gender
    ctx.out.mentions.append(Mention(key, form, src, kind=kind, gender=gender, species=species))


def _relation_word(adj: str | None, word: str) -> tuple[str, str, str | None] | None:
    """(relation, kind, gender) of "best friend", "sister", "dog"; None for "my knee"."""
    low = word.lower()
    both = f"{(adj or '').strip().lower()} {low}".strip()
    if both in COMPOUND_RELATIONS:
        rel = COMPOUND_RELATIONS[both]
        return rel, "person", PERSON_RELATIONS.get(rel.split()[-1])
    if low in PERSON_RELATIONS:
        return low, "person", PERSON_RELATIONS[low]
    if low.endswith("s") and low[:-1] in PERSON_RELATIONS:
        return low, "person", None
    if low in PET_SPECIES:
        return low, "pet", None
    return None


def _span_at(found: list[NameSpan], pos: int) -> NameSpan | None:
    for n in found:
        if n.start == pos:
            return n
    return None


def _relations(ctx: _Session, sentence: str, found: list[NameSpan], author: str, other: str,
               src: Source) -> dict[int, tuple[str, int]]:
    """Relation phrases of the sentence: "my sister Inês", "Inês, my sister", "my dog, Biscuit".

    Returns, by the phrase's start, the key it stands for (the name's when the
    phrase names one) and where the phrase ends.
    """
    out: dict[int, tuple[str, int]] = {}
    for m in _REL.finditer(sentence):
        rel = _relation_word(m.group(2), m.group(3))
        if rel is None:
            continue
        relation, kind, gender = rel
        owner = author if m.group(1).lower() in ("my", "our") else other
        rkey = rel_key(owner, relation)
        species = relation if kind == "pet" else None
        tail = sentence[m.end():]
        named = re.match(r"(?:\s*,\s*|\s+(?:named|called)\s+|'s name is\s+|\s+is\s+(?:called|"
                         r"named)\s+|\s+)", tail)
        span = _span_at(found, m.end() + named.end()) if named else None
        if span is None:  # "Inês, my sister" / "Inês is my sister"
            before = sentence[:m.start()]
            for n in found:
                gap = before[n.end:] if n.end <= m.start() else None
                if gap is not None and re.fullmatch(r"\s*,\s*|\s+(?:is|was)\s+", gap):
                    span = n
        if span is not None and (span.possessive or ctx.kinds.get(_key_of(ctx, span))
                                 in PARTICIPANTS):
            span = None  # "your kids, John, ...": John is who is spoken to
        if span is not None:
            nkey = _key_of(ctx, span)
            ctx.out.links.append(Link(rkey, nkey, src))
            _mention(ctx, nkey, span.text, src, kind, gender, species)
            _mention(ctx, rkey, m.group(0), src, kind, gender, species)
            end = max(m.end(), span.end)
            out[min(m.start(), span.start)] = (nkey, end)
        else:
            _mention(ctx, rkey, m.group(0), src, kind, gender, species)
            out[m.start()] = (rkey, m.end())
    return out


def _see(ctx: _Session, turn: int, found: list[NameSpan],
         relations: dict[int, tuple[str, int]], start: int, end: int) -> None:
    """Record the clause's mentions (after its own subject was read) for later pronouns."""
    keys = [key for pos, (key, _) in sorted(relations.items()) if start <= pos < end]
    for span in found:
        key = _key_of(ctx, span)
        if key not in keys:
            keys.append(key)
    for key in keys:
        ctx.window.append(_Seen(turn, key))


def _resolve_pronoun(ctx: _Session, word: str, turn: int) -> str | None:
    """The one person (or pet) of a compatible gender mentioned in the window, if only one."""
    want = "f" if word in ("she", "her") else "m"
    found: list[str] = []
    for seen in reversed(ctx.window):
        if seen.turn < turn - WINDOW_TURNS + 1:
            break
        key = seen.key
        if is_participant(key) or key in found or key in ctx.recommended:
            continue
        kind = ctx.kinds.get(key)
        if kind in ("place", "org", "user", "assistant"):
            continue
        if kind is None and (ctx.tokens.get(key, 1) > 2 or key in ctx.weak):
            continue
        if ctx.genders.get(key, want) != want:
            continue
        found.append(key)
    if len(found) == 1:
        ctx.genders.setdefault(found[0], want)
        return found[0]
    return None


# -- clauses -------------------------------------------------------------------
_ALLOWED_SUBJECTS = (None, "person", "pet", "user", "assistant")
_POSSESSIVE_SLOTS = {"job": "works_as", "work": "works_as", "age": "age", "birthday": "birthday",
                     "home": "lives_in", "hometown": "from", "diet": "diet",
                     "favourite food": "favourite:food", "favorite food": "favourite:food"}
_RECOMMEND_CUE = re.compile(
    r"(?:^(?:\W*\w+,\s+)?|\b(?:should|could|can|might|must|maybe|definitely|also|then)\s+)"
    r"(?:try|check out|visit|go to)\b|\brecommend(?:ed|s)?\b|\bsuggest(?:ed|s)?\b|"
    r"\byou (?:can|could|should|might|must) (?:stay|go|visit|eat|try|check|see|head|book)\b|"
    r"\b(?:is|are) (?:a |an )?(?:good|great|perfect|nice|solid|excellent) "
    r"(?:pick|choice|option|bet|place|spot|idea)s?\b|\bworth (?:a )?visit(?:ing)?\b|"
    r"\bdo not miss\b", re.IGNORECASE)


def _fact(ctx: _Session, c: _Clause, key: str, slot: str, value: str,
          when: str | None = None) -> None:
    value = value.strip()
    if value:
        ctx.out.facts.append(Fact(key, slot, value, c.source, c.author, when or ctx.said,
                                  ctx.said))


def _subject(ctx: _Session, c: _Clause, text: str, pos: int) -> tuple[str, int] | None:
    """Who the clause is about and where its predicate starts (an offset in the sentence)."""
    if re.match(r"I\b", text):
        return c.author, pos + 1
    m = re.match(r"(we|you|she|he)\b", text, re.IGNORECASE)
    if m:
        word = m.group(1).lower()
        if word == "we":
            return c.author, pos + m.end()
        if word == "you":
            return c.other, pos + m.end()
        key = _resolve_pronoun(ctx, word, c.turn)
        return (key, pos + m.end()) if key else None
    if pos in c.relations:
        key, end = c.relations[pos]
        return key, end
    m = re.match(r"(?:my|our)\s+(?=[a-z])", text, re.IGNORECASE)
    if m:  # "my knee hurt ...": the author's, the noun kept in the predicate
        return c.author, pos + m.end()
    span = _span_at(c.names, pos)
    if span is not None:
        key = _key_of(ctx, span)
        if span.possessive:
            _possessive(ctx, c, key, c.sentence[span.end + 2:c.end])
            return None
        return key, span.end
    m = re.match(r"(her|his)\s+(.+)$", text, re.IGNORECASE)
    if m:
        key = _resolve_pronoun(ctx, "she" if m.group(1).lower() == "her" else "he", c.turn)
        if key:
            _possessive(ctx, c, key, m.group(2))
    return None


def _possessive(ctx: _Session, c: _Clause, key: str, rest: str) -> None:
    """ "Inês's job is nurse", "her age is 34"."""
    m = _POSSESSIVE_ATTR.match(rest)
    if not m:
        return
    slot = _POSSESSIVE_SLOTS.get(m.group(1).lower())
    value = noun_phrase(m.group(2))
    if slot and value:
        _fact(ctx, c, key, slot, value)


def _clause(ctx: _Session, c: _Clause) -> bool:
    """Read one clause; True when it held a recommendation by someone other than its author."""
    text = _MARKERS.sub("", c.text)
    pos = c.start + (len(c.text) - len(text))
    if (home := _HOME_COUNTRY.search(c.text)) and not c.text.rstrip().endswith("?"):
        # "a gift from my grandma in my home country, Sweden": where the author is from.
        _fact(ctx, c, c.author if home.group(1).lower() in ("my", "our") else c.other, "from",
              home.group(2))
    fav = _FAVOURITE.match(text)
    if fav:
        owner: str | None
        if fav.group(1):
            word = fav.group(1).lower()
            owner = (c.author if word in ("my", "our") else c.other if word == "your"
                     else _resolve_pronoun(ctx, "she" if word == "her" else "he", c.turn))
        else:
            span = _span_at(c.names, pos)
            owner = _key_of(ctx, span) if span is not None else None
        value = noun_phrase(fav.group(4))
        if owner and value:
            _fact(ctx, c, owner, f"favourite:{fold(fav.group(3))}", value)
        return False
    best = _BEST_THING.match(text)
    if best:
        value = noun_phrase(best.group(1))
        if value:
            _fact(ctx, c, c.author, f"pref:{fold(value)}", f"likes {value}")
        return False
    subject = _subject(ctx, c, text, pos)
    if subject is None:
        return False
    key, start = subject
    if ctx.kinds.get(key) not in _ALLOWED_SUBJECTS:
        return False
    return _predicate(ctx, c, key, start)


def _clause_dates(c: _Clause, start: int) -> list[ResolvedDate]:
    return [d for d in c.dates if start <= d.start < c.end]


def _predicate(ctx: _Session, c: _Clause, key: str, start: int) -> bool:
    rest = c.sentence[start:c.end]
    lead = len(rest) - len(rest.lstrip(" ,"))  # "Ana, my best friend, is ..."
    start += lead
    rest = rest[lead:]
    aux_m = _AUX.match(rest)
    aux = aux_m.group(1).lower() if aux_m else ""
    at = start + (aux_m.end() if aux_m else 0)
    after = c.sentence[at:c.end]
    neg = bool(_NEGATION.search(aux))
    be = bool(_BE.search(aux))
    future = bool(_FUTURE_AUX.search(aux))
    dates = _clause_dates(c, at)
    cut = (dates[0].start - at) if dates else None
    when = date_text(dates[0]) if dates else None
    specific = False  # a fact of a state ("vegetarian"): no event besides it
    change = False  # a fact of a change ("moved to Porto"): an event or plan too

    if _REC_VERB.match(after) and not is_participant(key):
        found = [n for n in c.names if n.start >= at]
        _recommend(ctx, found, key, c)
        return True
    if (m := _DIET.match(after)) and (be or re.match(r"(?:become|became|gone|went|turned)",
                                                      after, re.IGNORECASE)):
        diet = m.group(1).lower().replace(" ", "-")
        _fact(ctx, c, key, "diet", f"not {diet}" if neg else diet, when)
        specific = True
    elif (m := _AGE.match(after)) and (be or after.lower().startswith("turn")):
        if 0 < int(m.group(1)) <= 120:
            _fact(ctx, c, key, "age", m.group(1), when)
            specific = True
    elif m := _EATS.match(after):
        food = noun_phrase(m.group(2), cut=_shift(cut, m.start(2)))
        if food and food.lower() not in _PRONOUN_OBJECTS:
            _fact(ctx, c, key, f"eats:{fold(food)}",
                  f"{'does not eat' if neg else 'eats'} {food}", when)
            specific = True
    elif (m := _LIKE.match(after)) and _liked(m.group(2)):
        obj = noun_phrase(m.group(2), cut=_shift(cut, m.start(2)))
        if obj and obj.split()[0].lower() not in _PRONOUN_OBJECTS:
            _fact(ctx, c, key, f"pref:{fold(obj)}", f"{'dislikes' if neg else 'likes'} {obj}",
                  when)
            specific = True
    elif m := _DISLIKE.match(after):
        obj = noun_phrase(m.group(2), cut=_shift(cut, m.start(2)))
        if obj and obj.split()[0].lower() not in _PRONOUN_OBJECTS:
            _fact(ctx, c, key, f"pref:{fold(obj)}", f"dislikes {obj}", when)
            specific = True
    elif m := _WORKS_AS.match(after):
        job = noun_phrase(m.group(1), max_words=5, cut=_shift(cut, m.start(1)))
        if job and not neg:
            _fact(ctx, c, key, "works_as", job, when)
            change = True
    elif m := _WORKS_AT.match(after):
        place = noun_phrase(m.group(1), max_words=8, cut=_shift(cut, m.start(1)))
        if place and not neg:
            _fact(ctx, c, key, "works_at", place, when)
            for span in c.names:
                if at + m.start(1) <= span.start < c.end and span.kind is None:
                    _mention(ctx, _key_of(ctx, span), span.text, c.source, "org")
            change = True
    elif (m := _LIVES.match(after)) and not neg:
        place = noun_phrase(m.group(1), max_words=6, cut=_shift(cut, m.start(1)))
        if place and place.split()[0].lower() not in _PRONOUN_OBJECTS:
            _fact(ctx, c, key, "lives_in", place, when)
            specific = True
    elif (m := _MOVED.match(after)) and not neg:
        place = noun_phrase(m.group(1), max_words=6, cut=_shift(cut, m.start(1)))
        if place:
            _fact(ctx, c, key, "lives_in", place, when)
            change = True
    elif (m := _FROM.match(after)) and (be or not after.lower().startswith("from")):
        place = noun_phrase(m.group(1), max_words=6, cut=_shift(cut, m.start(1)))
        if place:
            _fact(ctx, c, key, "from", place, when)
            specific = True
    elif m := _CARE.match(after):
        target = _target(ctx, c, at + m.start(1))
        if target is not None and target != key:
            _fact(ctx, c, key, "looks_after", f"@{target}", when)
            _fact(ctx, c, target, "cared_for_by", f"@{key}", when)
            change = True
    elif (m := _A_NOUN.match(after)) and be and not neg and not future:
        phrase = noun_phrase(m.group(1), max_words=4, cut=_shift(cut, m.start(1)))
        words = phrase.lower().split()
        if words and not (set(words) & _EVALUATIVE) and len(words) <= 3:
            _fact(ctx, c, key, "works_as" if words[-1] in JOBS else "is_a", phrase, when)
            specific = True
    elif m := _ING.match(after):
        verb = m.group(1).lower()
        if verb in ACTIVITIES and (be or "been" in aux or after.lower().startswith("been")):
            tail = noun_phrase(m.group(2), max_words=6, cut=_shift(cut, m.start(2)))
            _fact(ctx, c, key, "activity", f"{verb} {tail}".strip())
            specific = True
    if not specific and not change and not aux:
        m = _VERB_OBJECT.match(after)
        if m and m.group(1).lower() in ACTIVITIES and m.group(1).lower() == m.group(1):
            _fact(ctx, c, key, "activity",
                  f"{m.group(1)} {noun_phrase(m.group(2), max_words=10)}".strip())
            specific = True
    if not neg:
        _pastimes(ctx, c, key, at)
    _possessions(ctx, c, key, start)
    if not specific:
        _event_or_plan(ctx, c, key, rest, after, at, future, dates)
    return False


def _pastimes(ctx: _Session, c: _Clause, key: str, at: int) -> None:
    """Pastimes named in passing: "went camping", "took a pottery class" (kept besides the
    event the clause may also be), as one short ``activity`` each."""
    if ctx.kinds.get(key) not in _ALLOWED_SUBJECTS or c.text.rstrip().endswith("?"):
        return
    part = c.sentence[at:c.end]
    if _NEGATION.match(part.lstrip()):
        return
    for m in _GO_ING.finditer(part):
        verb = m.group(1).lower()
        if verb not in NOT_PASTIMES:
            _fact(ctx, c, key, "activity", verb)
    for m in _CLASS.finditer(part):
        words = m.group(1).lower().split()
        if words and words[-1] in HOBBY_NOUNS | ACTIVITIES:
            _fact(ctx, c, key, "activity", words[-1])
        elif words and words[0] in HOBBY_NOUNS | ACTIVITIES:
            _fact(ctx, c, key, "activity", words[0])


def _liked(obj: str) -> bool:
    """ "love garlic prawns", "like to cook"; not "love to check them out"."""
    m = re.match(r"to\s+([a-z]+)", obj, re.IGNORECASE)
    return m is None or m.group(1).lower() in _LIKED_INFINITIVES


def _shift(cut: int | None, by: int) -> int | None:
    """A cut offset of ``after`` as an offset into a group that starts ``by`` later."""
    if cut is None:
        return None
    return cut - by if cut > by else None


def _target(ctx: _Session, c: _Clause, pos: int) -> str | None:
    """The entity a phrase at ``pos`` names: "Biscuit", "my dog", "our dog", "her"."""
    span = _span_at(c.names, pos)
    if span is not None:
        return _key_of(ctx, span)
    if pos in c.relations:
        return c.relations[pos][0]
    rest = c.sentence[pos:c.end]
    m = re.match(r"(?:the|our|my)\s+([a-z]+)", rest, re.IGNORECASE)
    if m:
        rel = _relation_word(None, m.group(1))
        if rel is not None:
            return rel_key(c.author, rel[0])
    m = re.match(r"(her|him)\b", rest, re.IGNORECASE)
    if m:
        return _resolve_pronoun(ctx, "she" if m.group(1).lower() == "her" else "he", c.turn)
    return None


def _possessions(ctx: _Session, c: _Clause, owner: str, at: int) -> None:
    """Pets ("adopted a cat named Sardinha") and things owned ("bought a new car")."""
    part = c.sentence[at:c.end]
    for m in _PET.finditer(part):
        species = m.group(1).lower()
        span = _span_at(c.names, at + m.end()) if m.group(2) else None
        value = f"a {species}"
        if span is not None:
            nkey = _key_of(ctx, span)
            rkey = rel_key(owner, species)
            ctx.out.links.append(Link(rkey, nkey, c.source))
            _mention(ctx, nkey, span.text, c.source, "pet", species=species)
            if owner == c.author:
                _mention(ctx, rkey, f"my {species}", c.source, "pet", species=species)
            value = f"a {species} named {span.text}"
        _fact(ctx, c, owner, "owns", value)
    for m in _OWN.finditer(part):
        _fact(ctx, c, owner, "owns", " ".join(g.strip() for g in m.groups() if g))


def _past(word: str) -> bool:
    return word in PAST_FORMS or (word.endswith("ed") and len(word) > 3)


def _event_or_plan(ctx: _Session, c: _Clause, key: str, rest: str, after: str, at: int,
                   future: bool, dates: list[ResolvedDate]) -> None:
    """A dated or past-tense clause is an event; a future one a plan."""
    if ctx.kinds.get(key) not in _ALLOWED_SUBJECTS:
        return
    first_m = _FIRST_WORD.match(after)
    first = first_m.group(1).lower() if first_m else ""
    said = ctx.anchor.date() if ctx.anchor is not None else None
    ahead = [d for d in dates if said is not None and d.value > said]
    behind = [d for d in dates if said is not None and d.value < said]
    cue = _PLAN_CUE.match(after)
    slot = when = None
    value = after
    if future or cue or (ahead and not _past(first)):
        slot = "plan"
        # "going to Madeira next week", "will look after Biscuit": the verb stays.
        value = after[cue.end():] if cue else _LEADING_BE.sub("", rest)
        when = date_text(ahead[0]) if ahead else None
    elif first not in NOT_EVENTS and (_past(first) or (behind and first)):
        slot = "event"
        when = date_text(behind[0]) if behind else ctx.said
    if slot is None:
        return
    text = clip_words(value, EVENT_WORDS)
    if not text:
        return
    _fact(ctx, c, key, slot, text, when)
    # "... with my sister Inês": the plan or event is hers too.
    for pos, (other, _) in c.relations.items():
        if at <= pos < c.end and c.sentence[max(0, pos - 5):pos].lower() == "with " \
                and other != key:
            _fact(ctx, c, other, slot, text, when)
    for span in c.names:
        if at <= span.start < c.end and c.sentence[max(0, span.start - 5):span.start] == "with ":
            other = _key_of(ctx, span)
            if other != key and ctx.kinds.get(other) in _ALLOWED_SUBJECTS:
                _fact(ctx, c, other, slot, text, when)


def _recommend(ctx: _Session, found: list[NameSpan], by: str, c: _Clause) -> None:
    """Every named thing in a recommending sentence: recommended by ``by``."""
    for span in found:
        key = _key_of(ctx, span)
        if key == by or ctx.kinds.get(key) in ("user", "assistant", "person"):
            continue
        ctx.recommended.add(key)
        _fact(ctx, c, by, "recommended", f"@{key}")
        _fact(ctx, c, key, "recommended_by", f"@{by}")
