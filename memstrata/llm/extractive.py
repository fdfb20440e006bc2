"""The extractive layer builder: L0, L1 and L2 from the text itself, no model.

This is the offline default. It cannot paraphrase, so it selects and rewrites:
each message is split into sentences; small talk ("Hey! Good to see you!") is
recognised and set aside; the rest is scored for information (content words,
names, numbers, dates, first-person statements); relative dates are pinned to
the session date and first/second person is replaced by the speakers' names, so
every line stands on its own.

* L0 (``summarize_window``): the best sentence(s) of each turn within the word
  limit, plus YAKE-ranked keywords and lexicon topic tags.
* L1 (``key_facts``): the sentences that state facts, preferences or plans
  about a person, deduplicated, in session order, each with its turns.
* L2 (``turn_notes``): every informative sentence of every turn, in order.

Everything is deterministic: the same input always gives the same output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

from memstrata.llm.types import LayerBuilder, TurnSummary, Window
from memstrata.model import KeyFact, SessionMeta, Turn, TurnNote
from memstrata.text.dates import ResolvedDate, annotate_dates
from memstrata.text.keywords import KeywordExtractor, is_stop, normalize, topic_tags
from memstrata.text.lexicon import GREETING_OPENERS
from memstrata.text.perspective import rewrite_person
from memstrata.text.sentences import clip_words, count_words, split_sentences

_TOKEN = re.compile(r"[$€£]?\d[\d,.:]*%?|[A-Za-z](?:[A-Za-z'\-]*[A-Za-z])?")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|(?i:my|me|we|our|we're|we've|us))\b")
_SECOND_PERSON = re.compile(r"\b(?i:you|your|you're|you've|you'd|you'll)\b")
# Verbs of state, preference and plan, and "my <relation>": a sentence with one
# of these usually states something durable about the speaker.
_FACT_VERB = re.compile(
    r"\b(?:love|loves|like|enjoy|prefer|hate|want|plan|planning|going\s+to|gonna|hope|"
    r"decided|started|joined|work|working|moved|bought|adopted|visited|learned|learning|"
    r"finished|signed|volunteer\w*|married|graduated|study|studying|live|living|favorite|"
    r"favourite|keen|interested|allergic|afraid|used\s+to|never|always)\b"
    r"|\b(?:my|our)\s+(?:kids?|children|son|daughter|husband|wife|partner|mom|dad|mother|"
    r"father|family|sister|brother|friends?|dog|cat|pet|job|boss|team|home|house)\b",
    re.IGNORECASE,
)
_FACT_VERB_BONUS = 2.0
_SECOND_PERSON_PENALTY = 1.5
_MIN_FACT_SCORE = 4.5  # below this, a sentence makes L1 only to reach MIN_FACTS
# "[shares a photo of ...]" is how ingestion turns an image into text.
_BRACKETED_ACTION = re.compile(r"^\[([a-z][^\]]*)\]$")
_PHOTO_OF_PHOTO = re.compile(
    r"\b(an? (?:photo|picture|image) of) (?:an? )?(?:photo|photograph|photography|picture|image"
    r"|close ?up)(?: of)?\b"
)
# Interjections that open a sentence but say nothing ("Yeah, ...", "Wow! ...").
_OPENERS = re.compile(
    r"^(?:(?:hey|hi|hello|yeah|yep|wow|whoa|oh|ah|aww*|haha+|lol|omg)\b[\s,!.]*"
    r"|(?:yes|ok|okay|well|so|totally|absolutely|definitely|sure|thanks|thank you)[,!.]+\s*)+",
    re.IGNORECASE,
)
_CAPTION_WEIGHT = 0.6  # image captions are machine-written and often off
_QUESTION_WEIGHT = 0.5  # questions ask for facts more often than they state them
MAX_FACTS = 25
MIN_FACTS = 5


@dataclass(frozen=True, slots=True)
class _People:
    """Who talks in the text being built, and the short names they call each other."""

    names: tuple[str, ...]
    #: Lower-cased full names, first names and nicknames ("mel" for Melanie).
    aliases: frozenset[str]
    #: ", Mel!" style forms of address, removed from rendered text.
    vocative: re.Pattern[str] | None

    @classmethod
    def of(cls, turns: Sequence[Turn]) -> _People:
        names = tuple(dict.fromkeys(m.who for t in turns for m in t.messages))
        firsts = {n.split()[0] for n in names if n}
        found = {
            w
            for t in turns
            for m in t.messages
            for w in _CAPITALISED.findall(m.content)
            if any(f != w and f.startswith(w) for f in firsts)
        }
        alias_words = sorted({*names, *firsts, *found}, key=lambda a: (-len(a), a))
        vocative = (
            re.compile(
                r"(?:,\s*(?:" + "|".join(map(re.escape, alias_words)) + r")\b(?=\s*[!?.,;]|\s*$))"
                r"|(?:^(?:" + "|".join(map(re.escape, alias_words)) + r")\s*[,!]\s*)"
            )
            if alias_words
            else None
        )
        return cls(names, frozenset(a.lower() for a in alias_words), vocative)

    def listener(self, speaker: str) -> str | None:
        others = [p for p in self.names if p != speaker]
        return others[0] if len(others) == 1 else None


@dataclass(slots=True)
class _Sentence:
    """One sentence of one message, with what the selectors need to know."""

    turn_index: int
    message: int
    position: int
    speaker: str
    listener: str | None
    raw: str
    dated: str
    dates: list[ResolvedDate]
    words: list[str]
    keys: frozenset[str]
    score: float
    question: bool
    filler: bool
    caption: bool
    _text: str | None = None

    def text(self, people: _People) -> str:
        """Names for pronouns, absolute dates, no interjections or forms of address."""
        if self._text is None:
            self._text = self._rewrite(people)
        return self._text

    def _rewrite(self, people: _People) -> str:
        action = _BRACKETED_ACTION.match(self.dated)
        if action:
            return f"{self.speaker} " + _PHOTO_OF_PHOTO.sub(r"\1", action.group(1))
        body = _OPENERS.sub("", self.dated)
        if people.vocative is not None:
            body = people.vocative.sub("", body)
        body = body.strip()
        if not any(c.isalnum() for c in body):
            body = self.dated  # nothing but a greeting: keep it as said
        body = body[0].upper() + body[1:]
        return rewrite_person(body, self.speaker, self.listener)

    def render(self, people: _People) -> str:
        """:meth:`text`, prefixed with the speaker unless it already names them."""
        text = self.text(people)
        return text if self.speaker in text else f"{self.speaker}: {text}"


def _analyse_sentence(
    turn_index: int, message: int, position: int, speaker: str, listener: str | None,
    raw: str, anchor: datetime | None, people: _People,
) -> _Sentence:
    """Score how much a sentence tells: content words, more for names, numbers, dates."""
    dated, dates = annotate_dates(raw, anchor)
    tokens = _TOKEN.findall(raw)
    words = [t.lower() for t in tokens]
    score = 0.0
    content = 0
    named = False
    keys: set[str] = set()
    for i, (tok, low) in enumerate(zip(tokens, words, strict=True)):
        digit = tok[0].isdigit() or tok[0] in "$€£"
        if low in people.aliases or (not digit and is_stop(low)):
            continue
        content += 1
        keys.add(normalize(low))
        score += 1.3 if len(low) >= 7 else 1.0
        if digit:
            score += 0.5
        elif (i > 0 and tok[0].isupper() and tok != "I") or (len(tok) > 1 and tok.isupper()):
            score += 1.0
            named = True
    score += 1.5 * len(dates)
    if _FIRST_PERSON.search(raw):
        score += 1.0
    question = raw.endswith("?")
    caption = _BRACKETED_ACTION.match(raw) is not None
    if question:
        score *= _QUESTION_WEIGHT
    if caption:
        score *= _CAPTION_WEIGHT
        filler = content == 0
    else:
        greeting = content <= 2 and raw.lower().startswith(GREETING_OPENERS)
        # One content word is enough in a full sentence ("You'd be a great
        # counselor!"), not in a reaction ("Love it!").
        short = content == 1 and len(tokens) < 5 and not dates and not named
        filler = greeting or content == 0 or short
    return _Sentence(
        turn_index=turn_index, message=message, position=position, speaker=speaker,
        listener=listener, raw=raw, dated=dated, dates=dates, words=words,
        keys=frozenset(keys), score=score, question=question, filler=filler, caption=caption,
    )


class ExtractiveBuilder(LayerBuilder):
    """Builds every layer by selecting and rewriting the session's own sentences."""

    name = "extractive"

    def __init__(
        self,
        max_words: int = 30,
        max_input_chars: int = 12000,
        *,
        max_turn_chars: int = 6000,
        max_note_words: int = 40,
        keyword_backend: str = "fast",
    ) -> None:
        if max_words < 5:
            raise ValueError("max_words must be at least 5")
        if keyword_backend not in ("fast", "yake"):
            raise ValueError(f"keyword_backend must be 'fast' or 'yake', not {keyword_backend!r}")
        self.max_words = max_words
        self.max_input_chars = max_input_chars
        self.max_turn_chars = max_turn_chars
        self.max_note_words = max_note_words
        self._keywords = KeywordExtractor(backend="yake" if keyword_backend == "yake" else "fast")

    @property
    def version(self) -> str:
        # Settings that change the output are part of the version (it keys the
        # L1/L2 cache); the defaults give the plain code version.
        parts = ["extractive-4"]
        if self.max_words != 30:
            parts.append(f"w{self.max_words}")
        if self.max_input_chars != 12000:
            parts.append(f"c{self.max_input_chars}")
        if self.max_turn_chars != 6000 or self.max_note_words != 40:
            parts.append(f"t{self.max_turn_chars}n{self.max_note_words}")
        if self._keywords.backend != "fast":
            parts.append(self._keywords.backend)
        return ":".join(parts)

    def _analyse(
        self, turn: Turn, anchor: datetime | None, people: _People, budget: int
    ) -> list[_Sentence]:
        """Sentences of ``turn``, reading at most ``budget`` characters of it."""
        out: list[_Sentence] = []
        for mi, msg in enumerate(turn.messages):
            if budget <= 0:
                break
            body = msg.content[:budget]
            budget -= len(body)
            speaker = msg.who
            listener = people.listener(speaker)
            for pos, raw in enumerate(split_sentences(body.replace("’", "'"))):
                out.append(_analyse_sentence(turn.index, mi, pos, speaker, listener, raw,
                                             anchor, people))
        return out

    # -- L0 -----------------------------------------------------------------
    def summarize_window(self, window: Window) -> list[TurnSummary]:
        people = _People.of(window.turns)
        wanted = set(window.targets)
        return [
            self._summarize_turn(
                turn,
                self._analyse(turn, window.meta.session_date, people, self.max_turn_chars),
                people,
            )
            for turn in window.turns
            if turn.index in wanted
        ]

    def _summarize_turn(
        self, turn: Turn, sents: list[_Sentence], people: _People
    ) -> TurnSummary:
        index = turn.index
        assistant_chat = any(m.role == "assistant" and m.speaker is None for m in turn.messages)
        useful = [s for s in sents if not s.filler] or sorted(
            sents, key=lambda s: (-s.score, s.message, s.position))[:1]
        # Greedy knapsack on the word budget: most information per word first.
        order = sorted(useful, key=lambda s: (-s.score / max(4, len(s.words)), s.message,
                                              s.position))
        user_msgs = {i for i, m in enumerate(turn.messages) if m.role == "user"}
        if assistant_chat:
            # Memory is about the user: everything the user said comes before the
            # assistant's (long, generic) reply, which only fills what is left.
            order.sort(key=lambda s: s.message not in user_msgs)
        chosen: list[_Sentence] = []
        left = self.max_words
        reply_in = False
        for s in order:
            cost = count_words(s.render(people))
            # In an assistant chat the reply's best sentence still gets the words
            # that are left, clipped at the end (it holds the advice asked for).
            reply_first = assistant_chat and s.message not in user_msgs and not reply_in
            if not chosen or cost <= left or (reply_first and left >= 8):
                chosen.append(s)
                left -= cost
                reply_in = reply_in or s.message not in user_msgs
            if left < 5:
                break
        chosen.sort(key=lambda s: (s.message, s.position))
        pieces = []
        for _, group in groupby(chosen, key=lambda s: s.message):
            members = list(group)
            texts = [s.text(people) for s in members]
            speaker = members[0].speaker
            joined = " ".join(texts)
            # One speaker label per message, unless its first sentence names them.
            pieces.append(joined if speaker in texts[0] else f"{speaker}: {joined}")
        summary = clip_words(" ".join(pieces), self.max_words) if pieces else ""
        basis = [s for s in sents if not s.filler and not s.caption] or useful
        known = {normalize(w) for w in _TOKEN.findall(summary)}
        fallback = [s.raw for s in sents if s.filler or s.caption]
        if assistant_chat:
            # The user's own words first ("Berlin half marathon"), even when the summary
            # holds them too: they are what the turn is about. The reply only tops up
            # what is left.
            mine = [s for s in basis if s.message in user_msgs]
            keywords = self._keyword_list(mine, people, fallback=[], known=set()) if mine else []
            if len(keywords) < self._keywords.max_keywords:
                rest = self._keyword_list([s for s in basis if s.message not in user_msgs],
                                          people, fallback=fallback,
                                          known=known | {normalize(w) for k in keywords
                                                         for w in _TOKEN.findall(k)})
                seen = {k.lower() for k in keywords}
                keywords += [k for k in rest if k.lower() not in seen]
                keywords = keywords[: self._keywords.max_keywords]
        else:
            keywords = self._keyword_list(basis, people, fallback=fallback, known=known)
        words = [w for s in basis for w in s.words]
        return TurnSummary(
            turn_index=index, summary=summary, keywords=keywords, tags=topic_tags(words, keywords)
        )

    def _keyword_list(
        self, basis: list[_Sentence], people: _People, *, fallback: list[str],
        known: set[str],
    ) -> list[str]:
        return self._keywords.extract(
            [s.raw for s in basis],
            positions=[s.position for s in basis],
            dates=[d.label for s in basis for d in s.dates],
            exclude=people.aliases,
            fallback=fallback,
            known=known,
        )

    # -- L1 -----------------------------------------------------------------
    def key_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[KeyFact]:
        """The most fact-like statements (see :func:`_fact_score`), in session order.

        At most ``max_input_chars`` of the session are read, from the start:
        the cap bounds the cost of one call however long the session is.
        """
        people = _People.of(turns)
        budget = self.max_input_chars
        ranked: list[tuple[float, int, int, int, _Sentence]] = []
        read = 0
        for turn in sorted(turns, key=lambda t: t.index):
            if budget <= 0:
                break
            read += 1
            for s in self._analyse(turn, meta.session_date, people, budget):
                # Facts are about the user: an assistant's advice or echo is not one.
                msg = turn.messages[s.message]
                if msg.role == "assistant" and msg.speaker is None:
                    continue
                if not (s.filler or s.question or s.caption):
                    ranked.append((-_fact_score(s), s.turn_index, s.message, s.position, s))
            budget -= sum(len(m.content) for m in turn.messages)
        ranked.sort(key=lambda r: r[:4])

        # About one fact per turn read keeps L1 well below L2 in size.
        limit = min(MAX_FACTS, max(MIN_FACTS, read))
        kept: list[tuple[_Sentence, list[int]]] = []
        for neg_score, *_, s in ranked:
            if len(kept) >= limit or (len(kept) >= MIN_FACTS and -neg_score < _MIN_FACT_SCORE):
                break
            dup = next((k for k in kept if _similar(k[0].keys, s.keys)), None)
            if dup is None:
                kept.append((s, [s.turn_index]))
            elif s.turn_index not in dup[1]:
                dup[1].append(s.turn_index)
        kept.sort(key=lambda k: (k[0].turn_index, k[0].message, k[0].position))
        return [
            KeyFact(text=clip_words(s.render(people), self.max_note_words),
                    turn_indices=sorted(idx))
            for s, idx in kept
        ]

    # -- L2 -----------------------------------------------------------------
    def turn_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[TurnNote]:
        people = _People.of(turns)
        notes: list[TurnNote] = []
        for turn in sorted(turns, key=lambda t: t.index):
            sents = self._analyse(turn, meta.session_date, people, self.max_turn_chars)
            bullets = [clip_words(s.render(people), self.max_note_words)
                       for s in sents if not s.filler]
            if not bullets and turn.messages:
                # Pure small talk: one short line, so the turn is not silent.
                first = turn.messages[0]
                bullets = [clip_words(f"{first.who}: {' '.join(first.content.split())}", 12)]
            notes.append(TurnNote(turn_index=turn.index, bullets=bullets))
        return notes


def _fact_score(s: _Sentence) -> float:
    """Information plus cues of a durable fact (a state, preference or plan verb).

    Remarks addressed to the listener ("you're so kind") are mostly politeness,
    so they rank lower unless the speaker also talks about themself.
    """
    score = s.score
    if _FACT_VERB.search(s.raw):
        score += _FACT_VERB_BONUS
    if _SECOND_PERSON.search(s.raw) and not _FIRST_PERSON.search(s.raw):
        score -= _SECOND_PERSON_PENALTY
    return score


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    """Near-duplicate facts: most content words of the shorter one shared."""
    if not a or not b:
        return a == b
    return len(a & b) / min(len(a), len(b)) >= 0.8
