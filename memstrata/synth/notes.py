"""Organized notes: the evidence arranged for the answer step (APDMem §3.3).

Five parts, as in the paper: the relevant facts with session and date, their
order in time, contradictions between sessions (the latest version is taken
as true), the items of a counting or list question, and a hint. Offline the
parts are computed from the ranked evidence lines; with an LLM the
synthesizer model writes them, and the ranked lines are still kept so that
the answer can name its sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memstrata.evidence import lexical, relevance
from memstrata.evidence.cues import Cues
from memstrata.evidence.relevance import Scored
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.extract import span_for

if TYPE_CHECKING:
    from memstrata.evidence.trace import Trace
    from memstrata.llm.openai_compat import ChatClient

MAX_RELEVANT = 12
MAX_ITEMS = 10
#: An enumerated item is a short phrase, not a clause.
ITEM_WORDS = 4
#: Lines covering less than this share of the question are not "relevant".
MIN_COVERAGE = 0.2


@dataclass
class OrganizedNotes:
    """The notes, structured (for the extractive answer) and as text (for people and LLMs)."""

    relevant: list[Scored] = field(default_factory=list)
    timeline: list[EvidenceLine] = field(default_factory=list)
    #: Groups of lines from different sessions that disagree; each group oldest first.
    contradictions: list[list[EvidenceLine]] = field(default_factory=list)
    #: (item, line it came from) for counting and list questions.
    items: list[tuple[str, EvidenceLine]] = field(default_factory=list)
    hint: str = ""
    text: str = ""


class NotesSynthesizer(Protocol):
    def organize(self, cues: Cues, lines: Sequence[EvidenceLine], evidence_text: str,
                 draft: str | None, asked_on: datetime | None, trace: "Trace",
                 step: int) -> OrganizedNotes: ...


def _label(line: EvidenceLine) -> str:
    turn = f", turn {line.turn_index}" if line.turn_index is not None else ""
    return f"[{line.session_id}, {line.date_text}, {line.layer.label}{turn}]"


def _differs(a: EvidenceLine, b: EvidenceLine) -> bool:
    """Same topic (most words shared) but different specifics (numbers or names)."""
    ta, tb = lexical.term_set(a.text), lexical.term_set(b.text)
    if not ta or not tb or ta == tb:
        return False
    if len(ta & tb) / len(ta | tb) < 0.5:
        return False
    specifics_a = {t for t in ta if t.isdigit()} | {n.lower() for n in lexical.names(a.text)}
    specifics_b = {t for t in tb if t.isdigit()} | {n.lower() for n in lexical.names(b.text)}
    return specifics_a != specifics_b


def organize_lines(cues: Cues, lines: Sequence[EvidenceLine], draft: str | None) -> OrganizedNotes:
    """The five parts of the notes, computed from the evidence lines."""
    ranked = [s for s in relevance.rank(cues, lines) if s.coverage >= MIN_COVERAGE]
    relevant: list[Scored] = []
    seen_text: set[str] = set()
    for s in ranked:
        key = " ".join(lexical.terms(s.line.text))
        if key in seen_text:
            continue
        seen_text.add(key)
        relevant.append(s)
        if len(relevant) >= MAX_RELEVANT:
            break
    notes = OrganizedNotes(relevant=relevant)
    rel_lines = [s.line for s in relevant]
    if cues.temporal or len({ln.session_id for ln in rel_lines}) > 1:
        notes.timeline = sorted(rel_lines, key=lambda ln: (ln.session_date is None,
                                                           ln.session_date, ln.turn_index or 0))
    used: set[int] = set()
    for i, a in enumerate(rel_lines):
        if i in used:
            continue
        group = [a]
        for j in range(i + 1, len(rel_lines)):
            b = rel_lines[j]
            if j not in used and b.session_id != a.session_id and _differs(a, b):
                group.append(b)
                used.add(j)
        if len(group) > 1:
            notes.contradictions.append(sorted(group, key=lambda ln: (ln.session_date is None,
                                                                      ln.session_date)))
    if cues.counting:
        best = relevant[0].coverage if relevant else 0.0
        item_cues = Cues(question=cues.question, answer_type="thing", terms=cues.terms,
                         names=cues.names, subjects=cues.subjects, category=cues.category)
        # "Which languages": only lines naming languages give items, when some do.
        want = "members" if cues.category and any(
            relevance.members(cues.category, s.line.text) for s in relevant) else None
        keys: list[frozenset[str]] = []
        for s in relevant:
            if s.coverage < best * 0.6 and want is None:
                continue
            item, kind = span_for(item_cues, s.line, max_words=ITEM_WORDS)
            if want is not None and kind != want:
                continue
            k = lexical.term_set(item)
            if not item or not k or any(len(k & o) / len(k | o) >= 0.5 for o in keys):
                continue
            keys.append(k)
            notes.items.append((item, s.line))
            if len(notes.items) >= MAX_ITEMS:
                break
    if draft:
        notes.hint = draft
    elif relevant:
        notes.hint = span_for(cues, relevant[0].line)[0]
    notes.text = render(cues, notes)
    return notes


def render(cues: Cues, notes: OrganizedNotes) -> str:
    out = ["## Relevant facts"]
    out += [f"{i}. {_label(s.line)} {s.line.shown}" for i, s in enumerate(notes.relevant, 1)] \
        or ["(none found)"]
    if notes.timeline:
        out.append("\n## Timeline (oldest first)")
        last = len(notes.timeline) - 1
        for i, ln in enumerate(notes.timeline):
            mark = "  <- most recent" if i == last and last > 0 else ""
            out.append(f"- {ln.date_text} {ln.session_id}: {ln.shown}{mark}")
    if notes.contradictions:
        out.append("\n## Changes and conflicts (latest is current)")
        for group in notes.contradictions:
            out += [f"- {ln.date_text} {ln.session_id}: {ln.shown}" for ln in group]
            out.append(f"  current: {group[-1].shown}")
    if cues.counting:
        out.append(f"\n## Enumeration ({len(notes.items)} items)")
        out += [f"- {item} {_label(ln)}" for item, ln in notes.items] or ["(no items found)"]
    out.append("\n## Answer hint")
    out.append(notes.hint or "(the evidence does not point to an answer)")
    return "\n".join(out)


class ExtractiveNotes:
    """Offline notes, computed from the evidence lines."""

    def organize(self, cues: Cues, lines: Sequence[EvidenceLine], evidence_text: str,
                 draft: str | None, asked_on: datetime | None, trace: "Trace",
                 step: int) -> OrganizedNotes:
        return organize_lines(cues, lines, draft)


class LLMNotes:
    """Notes written by the synthesizer model; the ranked lines are kept for sources."""

    def __init__(self, client: "ChatClient") -> None:
        self.client = client

    def organize(self, cues: Cues, lines: Sequence[EvidenceLine], evidence_text: str,
                 draft: str | None, asked_on: datetime | None, trace: "Trace",
                 step: int) -> OrganizedNotes:
        from memstrata.evidence import llm_calls
        from memstrata.synth import prompts

        notes = organize_lines(cues, lines, draft)
        reply = llm_calls.chat(self.client, trace, step, "synthesizer",
                               prompts.notes_messages(cues.question, asked_on, evidence_text,
                                                      draft),
                               note="organized notes")
        notes.text = (reply.message.content or "").strip() or notes.text
        return notes

