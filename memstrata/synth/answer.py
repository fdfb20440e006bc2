"""The answer step: notes and draft in, a short answer with its sources out.

Offline the answer is quoted: the best-supported line (ranked by the notes,
the controller's draft line preferred when it is as good as the best) is cut
down to the span the question asks for. With an LLM the generator model reads
the notes and the draft and answers as JSON {"reasoning", "answer"}; its
sources are the evidence lines that best match the question and its answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memstrata.evidence import lexical, relevance
from memstrata.evidence.cues import Cues
from memstrata.evidence.relevance import Scored
from memstrata.evidence.extract import ABSTAIN_TEXT
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.extract import span_for
from memstrata.synth.notes import MIN_COVERAGE, OrganizedNotes, organize_lines

if TYPE_CHECKING:
    from memstrata.evidence.trace import Trace
    from memstrata.llm.openai_compat import ChatClient

#: Below this coverage of the question by the best line, the offline answer abstains.
ABSTAIN_BELOW = 0.3
_ABSTAIN = re.compile(
    r"\b(?:not\s+mentioned|no\s+information(?:\s+available)?|not\s+(?:stated|specified|"
    r"discussed|provided|available|in\s+the\s+(?:context|conversation))|(?:does|do|did)\s+not\s+"
    r"(?:say|mention|know)|unknown|cannot\s+(?:be\s+)?(?:determined|answer(?:ed)?)|"
    r"can't\s+(?:tell|answer)|unanswerable|insufficient\s+information)\b",
    re.IGNORECASE,
)
_LIST_ITEMS = 4


def is_abstention(text: str) -> bool:
    """Does the answer say the memory does not hold it?"""
    return bool(_ABSTAIN.search(text))


@dataclass(frozen=True)
class Draft:
    """The controller's preliminary answer and, offline, the line it came from."""

    text: str
    line: EvidenceLine | None = None


@dataclass
class Generated:
    answer: str
    abstained: bool = False
    sources: list[EvidenceLine] = field(default_factory=list)
    reasoning: str | None = None


class AnswerGenerator(Protocol):
    def generate(self, cues: Cues, notes: OrganizedNotes | None, lines: Sequence[EvidenceLine],
                 evidence_text: str, draft: Draft | None, asked_on: datetime | None,
                 trace: "Trace", step: int) -> Generated: ...


def draft_from(cues: Cues, lines: Sequence[EvidenceLine]) -> Draft | None:
    """The rule policy's draft: the span of the best line so far."""
    ranked = relevance.rank(cues, lines, limit=1)
    if not ranked or ranked[0].coverage < MIN_COVERAGE:
        return None
    text, _ = span_for(cues, ranked[0].line)
    return Draft(text, ranked[0].line) if text else None


#: The span kinds that really answer each typed question (others are fallbacks).
_TYPED_KINDS = {"date": ("date:resolved", "date:written"), "duration": ("duration",),
                "count": ("count",), "amount": ("amount",), "person": ("person",),
                "place": ("place",)}
#: Kinds whose answer is a value the evidence must state: without one, abstain.
_STATED_KINDS = frozenset({"duration", "amount"})


def _owned_by(owner: str, line: EvidenceLine) -> bool:
    """Is ``line`` said by (or about) the owner of a relation the question names?"""
    if owner.lower() in ("my", "our"):
        return line.speaker != relevance.ASSISTANT
    if owner.lower() in ("his", "her", "their"):
        return True
    name = owner[:-2]
    return line.speaker == name or name in line.text


def _kin_answer(cues: Cues, lines: Sequence[EvidenceLine]) -> tuple[str, list[EvidenceLine]]:
    """The name the evidence gives the relation the question asks about, and its lines."""
    assert cues.relation_target is not None
    owner, rel = cues.relation_target
    found: dict[str, list[EvidenceLine]] = {}
    for ln in lines:
        for stem, name in lexical.kin(ln.text):
            if stem == rel and _owned_by(owner, ln):
                found.setdefault(name, []).append(ln)
    if not found:
        return "", []
    name = max(found, key=lambda n: len(found[n]))
    # The verbatim line the user wrote first: finest layer, the user's own words.
    best = sorted(found[name], key=lambda ln: (ln.speaker == relevance.ASSISTANT,
                                               -int(ln.layer)))
    return name, best


def _relation_answer(name: str, lines: Sequence[EvidenceLine]
                     ) -> tuple[str, EvidenceLine] | None:
    """ "Who is Inês?": the relation the evidence gives her ("your sister")."""
    found = [(ln, said) for ln in lines if (said := lexical.relation_of(ln.text, name))]
    if not found:
        return _thing_named(name, lines)
    ln, (owner, rel) = min(found, key=lambda f: (f[0].speaker == relevance.ASSISTANT,
                                                 -int(f[0].layer)))
    whose = owner.lower()
    if whose in ("my", "our"):
        whose = f"{ln.speaker}'s" if ln.speaker else owner
    else:
        whose = owner
    if whose.lower() in ("user's", "my"):
        whose = "your"  # the user asks about their own people
    return f"{whose} {rel}", ln


def _thing_named(name: str, lines: Sequence[EvidenceLine]) -> tuple[str, EvidenceLine] | None:
    """ "Who is Sardinha?" against "I adopted a cat named Sardinha": "your cat"."""
    pattern = re.compile(rf"\b(a|an|my|our|the|his|her|their)\s+(?:[a-z]+\s+)?([a-z]+)\s+"
                         rf"(?:named|called)\s+{re.escape(name)}\b")
    for ln in sorted(lines, key=lambda ln: (ln.speaker == relevance.ASSISTANT,
                                            -int(ln.layer))):
        m = pattern.search(ln.text)
        if m is None:
            continue
        mine = m.group(1) in ("my", "our") or ln.speaker == "User" or ln.text.startswith(
            "User ")
        return f"{'your' if mine else m.group(1)} {m.group(2)}", ln
    return None


def _reply_to(question: EvidenceLine, lines: Sequence[EvidenceLine]) -> EvidenceLine | None:
    """The first sentence said in answer to ``question`` (a line ending in "?"), if read."""
    if not question.turn_indices:
        return None
    last = question.turn_indices[-1]
    for ln in lines:
        if (ln.session_id == question.session_id and ln.layer == question.layer
                and ln.turn_indices and 0 < ln.turn_indices[0] - last <= 1
                and ln.speaker != question.speaker and not ln.text.rstrip().endswith("?")):
            return ln
    return None


def _cited(line: EvidenceLine, lines: Sequence[EvidenceLine]) -> list[EvidenceLine]:
    """Sources for an answer cut from ``line``: a question is cited after its reply."""
    if line.text.rstrip().endswith("?"):
        reply = _reply_to(line, lines)
        if reply is not None:
            return [reply, line]
    return [line]


def _question_before(line: EvidenceLine, lines: Sequence[EvidenceLine]) -> EvidenceLine | None:
    """The question ``line`` replies to: the other speaker's "?" line just before it."""
    if not line.turn_indices or line.text.rstrip().endswith("?"):
        return None
    first = line.turn_indices[0]
    asked = None
    for ln in lines:
        if ln == line:
            break
        if (ln.session_id == line.session_id and ln.layer == line.layer and ln.turn_indices
                and 0 <= first - ln.turn_indices[-1] <= 1 and ln.speaker != line.speaker
                and ln.text.rstrip().endswith("?")):
            asked = ln
    return asked


def _typed_line(cues: Cues, candidates: Sequence[Scored], best: Scored,
                lines: Sequence[EvidenceLine] = ()) -> Scored:
    """Among lines nearly as good as the best, the first that holds the kind asked for.

    "When" wants a stated date rather than the session's, "how long" a
    duration, "who" a name: a slightly weaker line that has one beats a
    stronger line that does not. A reply ("She loved the garlic prawns")
    answers with what the question it replies to named ("Did Inês like
    Ramiro?"), so that question is looked at first.
    """
    wanted = _TYPED_KINDS.get(cues.answer_type)
    if not wanted:
        return best
    if span_for(cues, best.line)[1] not in wanted:
        asked = _question_before(best.line, lines)
        if asked is not None and span_for(cues, asked)[1] in wanted:
            return Scored(asked, best.score, best.coverage, True)
    near = [s for s in candidates[:5] if s.coverage >= best.coverage - 0.15]
    typed = [s for s in near if span_for(cues, s.line)[1] in wanted]
    # The user's own statement before the assistant's echo of it (unless the question
    # asks what the assistant said).
    for s in typed:
        if s.line.speaker != relevance.ASSISTANT or cues.asks_assistant:
            return s
    return typed[0] if typed else best


class ExtractiveAnswer:
    """Offline answer: the best supporting span, quoted, with its source line."""

    def __init__(self, abstain_below: float = ABSTAIN_BELOW) -> None:
        self.abstain_below = abstain_below

    def generate(self, cues: Cues, notes: OrganizedNotes | None, lines: Sequence[EvidenceLine],
                 evidence_text: str, draft: Draft | None, asked_on: datetime | None,
                 trace: "Trace", step: int) -> Generated:
        if cues.who_is is not None:
            found = _relation_answer(cues.who_is, lines)
            if found is not None:
                return Generated(found[0], sources=[found[1]])
        if cues.relation_target is not None:
            name, kin_lines = _kin_answer(cues, lines)
            if name:
                return Generated(name, sources=kin_lines[:1])
            return Generated(ABSTAIN_TEXT, abstained=True)
        cues = relevance.with_aliases(cues, lines)
        if notes is None:
            candidates = [s for s in relevance.rank(cues, lines) if s.coverage >= MIN_COVERAGE]
        else:
            candidates = notes.relevant
        yesno = cues.answer_type == "yesno"
        # A line naming members of the category asked for ("which languages": "Rust")
        # answers it even when it shares few of the question's words.
        named = bool(cues.category) and any(
            relevance.members(cues.category or "", s.line.text) for s in candidates[:5])
        if not candidates or (candidates[0].coverage < self.abstain_below and not yesno
                              and not named):
            if yesno:  # a guess beats silence: such questions ask for an inference
                return Generated("No")
            return Generated(ABSTAIN_TEXT, abstained=True)
        best = candidates[0]
        if relevance.subject_fit(cues, best.line) < 0 and cues.answer_type != "yesno":
            # The evidence is about someone else: the question put the wrong person in.
            return Generated(ABSTAIN_TEXT, abstained=True, sources=[best.line])
        if draft is not None and draft.line is not None:
            for s in candidates[:5]:
                if s.line == draft.line and s.score >= best.score - 0.05:
                    best = s
                    break
        kind = cues.answer_type
        best = _typed_line(cues, candidates, best, lines)
        if kind == "list" or (cues.counting and kind not in ("count", "amount", "date", "duration")):
            items = notes.items if notes is not None else organize_lines(cues, lines, None).items
            if items:
                chosen = items[:_LIST_ITEMS]
                return Generated(", ".join(i for i, _ in chosen),
                                 sources=[ln for _, ln in chosen])
        text, how = span_for(cues, best.line)
        if kind == "count" and how != "count":
            items = notes.items if notes is not None else organize_lines(cues, lines, None).items
            if items:
                return Generated(str(len(items)), sources=[ln for _, ln in items])
        if kind in _STATED_KINDS and how not in _TYPED_KINDS[kind]:
            # "How long did the race take?" with no duration in the evidence: a span about
            # the race is not an answer.
            return Generated(ABSTAIN_TEXT, abstained=True, sources=[best.line])
        return Generated(text or best.line.text, sources=_cited(best.line, lines))


class LLMAnswer:
    """The generator model answers from the notes (or the raw evidence) and the draft."""

    def __init__(self, client: "ChatClient") -> None:
        self.client = client

    def generate(self, cues: Cues, notes: OrganizedNotes | None, lines: Sequence[EvidenceLine],
                 evidence_text: str, draft: Draft | None, asked_on: datetime | None,
                 trace: "Trace", step: int) -> Generated:
        from memstrata.evidence import llm_calls  # noqa: PLC0415
        from memstrata.synth import prompts  # noqa: PLC0415

        context = notes.text if notes is not None else evidence_text
        data = llm_calls.chat_json(
            self.client, trace, step, "generator",
            prompts.answer_messages(cues.question, asked_on, context,
                                    draft.text if draft else None),
            note="answer")
        answer = str((data or {}).get("answer") or "").strip()
        reasoning = (data or {}).get("reasoning")
        if not answer:
            answer = draft.text if draft and draft.text else ABSTAIN_TEXT
        abstained = is_abstention(answer)
        sources: list[EvidenceLine] = []
        if not abstained:
            probe = Cues(question=cues.question, answer_type="thing",
                         terms=tuple(dict.fromkeys((*lexical.terms(answer), *cues.terms))))
            sources = [s.line for s in relevance.rank(probe, lines)[:3] if s.coverage > 0]
        return Generated(answer, abstained, sources,
                         str(reasoning) if reasoning is not None else None)
