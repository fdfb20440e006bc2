"""Every read view split into sentence lines that know whom they are about.

Ranking and quoting work on sentences, not on whole messages: a raw LoCoMo
message holds four or five sentences and only one answers the question. Each
line records its speaker and the participants it is about: those it names,
or, in a raw message, the speaker for "I"/"my" and the listener for "you"
(the layer builder has already made L0-L2 lines name their people). That
lets the answer step notice a question asked about the wrong person, which
is how adversarial questions are built. Raw sentences also get their
relative dates resolved against the session date, as L0-L2 lines already do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from memstrata.memo import memo

from memstrata.model import Layer, Turn
from memstrata.text.dates import annotate_dates
from memstrata.text.perspective import unname_placeholders
from memstrata.text.sentences import split_sentences


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One line of one read view: a fact bullet, a turn note, a message, a summary."""

    session_id: str
    session_date: datetime | None
    layer: Layer
    text: str
    turn_indices: tuple[int, ...] = ()
    speaker: str | None = None
    #: Source message ids (LoCoMo ``D3:7``) where the layer keeps them.
    source_ids: tuple[str, ...] = ()
    #: The conversation participants this line is about (named in it, or by its pronouns).
    about: tuple[str, ...] = ()
    #: A raw (L3) sentence as it was said, when ``text`` carries resolved dates for the
    #: answer step; what is shown to people, since L3 is verbatim.
    verbatim: str | None = None

    @property
    def shown(self) -> str:
        """The text to show: verbatim for raw lines; a built line's placeholder speakers
        ("User's stapler") in words ("the user's stapler"), since they are internal."""
        if self.verbatim is not None:
            return self.verbatim
        return self.text if self.layer == Layer.L3 else unname_placeholders(self.text)

    @property
    def turn_index(self) -> int | None:
        return self.turn_indices[0] if self.turn_indices else None

    @property
    def date_text(self) -> str:
        return self.session_date.strftime("%Y-%m-%d") if self.session_date else "unknown date"


_PREFIX = re.compile(r"^([A-Z][\w.'\-]*(?: [A-Z][\w.'\-]*){0,3}):\s+")
_FIRST = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Ww]e're|"
                    r"[Ww]e've|[Oo]ur|[Oo]urs|us)\b")
_SECOND = re.compile(r"\b(?:[Yy]ou|[Yy]our|[Yy]ours|[Yy]ou're|[Yy]ou've|[Yy]ou'd|[Yy]ou'll|"
                     r"[Yy]ourself)\b")


@lru_cache(maxsize=256)
def _names_pattern(participants: tuple[str, ...]) -> re.Pattern[str] | None:
    firsts = sorted({p.split()[0] for p in participants if p.split()}, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(map(re.escape, firsts)) + r")\b") if firsts else None


def mentioned(text: str, participants: Sequence[str]) -> tuple[str, ...]:
    """Participants named in ``text`` by their full or first name."""
    pattern = _names_pattern(tuple(participants))
    if pattern is None:
        return ()
    found = set(pattern.findall(text))
    return tuple(p for p in participants if p.split()[0] in found)


def about_of(body: str, participants: Sequence[str], speaker: str | None,
             listener: str | None, raw: bool) -> tuple[str, ...]:
    """Whom a line is about: the participants it names; in raw text, also by pronoun.

    A line that names nobody (a built line has already turned its "I" and
    "you" into names) is taken to be about its speaker: people mostly talk
    about their own lives. Measured on LoCoMo, this catches far more
    questions asked about the wrong person than it wrongly flags.
    """
    named = mentioned(body, participants)
    if named:
        return named
    if raw:
        if _FIRST.search(body) and speaker:
            return (speaker,)
        if _SECOND.search(body) and listener:
            return (listener,)
    return (speaker,) if speaker else ()


def split(session_id: str, session_date: datetime | None, layer: Layer, text: str,
          turn_indices: Sequence[int], participants: Sequence[str], *,
          speaker: str | None = None, listener: str | None = None,
          source_ids: Sequence[str] = (), raw: bool = False) -> tuple[EvidenceLine, ...]:
    """Sentence lines of one bullet, note, summary or message (memoised: lines are values).

    A ``Name:`` label at the start of a sentence sets the speaker from there
    on (L0 summaries join what several people said).
    """
    return _split(session_id, session_date, layer, text, tuple(turn_indices),
                  tuple(participants), speaker, listener, tuple(source_ids), raw)


@memo(65536)
def _split(session_id: str, session_date: datetime | None, layer: Layer, text: str,
           turn_indices: tuple[int, ...], participants: tuple[str, ...], speaker: str | None,
           listener: str | None, source_ids: tuple[str, ...], raw: bool,
           ) -> tuple[EvidenceLine, ...]:
    return tuple(_lines(session_id, session_date, layer, text, turn_indices, participants,
                        speaker, listener, source_ids, raw))


def _lines(session_id: str, session_date: datetime | None, layer: Layer, text: str,
           turn_indices: tuple[int, ...], participants: tuple[str, ...], speaker: str | None,
           listener: str | None, source_ids: tuple[str, ...], raw: bool,
           ) -> Iterator[EvidenceLine]:
    current = speaker
    for sentence in split_sentences(text):
        m = _PREFIX.match(sentence)
        if m and (not participants or m.group(1) in participants or not raw):
            current = m.group(1)
            sentence = sentence[m.end():]
        if not sentence.strip():
            continue
        verbatim = None
        if raw and session_date is not None:
            dated = annotate_dates(sentence, session_date)[0]
            if dated != sentence:
                verbatim, sentence = sentence, dated
        other = listener
        if other is None and current is not None:
            others = [p for p in participants if p != current]
            other = others[0] if len(others) == 1 else None
        yield EvidenceLine(session_id, session_date, layer, sentence, tuple(turn_indices),
                           current, tuple(source_ids),
                           about_of(sentence, participants, current, other, raw), verbatim)


def raw_lines(session_id: str, session_date: datetime | None, turns: Sequence[Turn],
              participants: Sequence[str]) -> list[EvidenceLine]:
    out: list[EvidenceLine] = []
    for t in turns:
        for m in t.messages:
            out.extend(split(session_id, session_date, Layer.L3, m.content, (t.index,),
                             participants, speaker=m.who,
                             source_ids=(m.source_id,) if m.source_id else (), raw=True))
    return out
