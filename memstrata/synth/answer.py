"""The answer step: notes and draft in, a short answer with its sources out.

Offline the answer is quoted: the best-supported line (ranked by the notes,
the controller's draft line preferred when it is as good as the best) is cut
down to the span the question asks for. With an LLM the generator model reads
the notes and the draft and answers as JSON {"reasoning", "answer"}; its
sources are the evidence lines that best match the question and its answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memstrata.evidence import inference, lexical, relevance
from memstrata.text import vocab
from memstrata.evidence.cues import Cues
from memstrata.evidence.relevance import Scored
from memstrata.evidence.extract import ABSTAIN_TEXT
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.extract import span_for
from memstrata.evidence.subject import Neighbourhood, Subject, subject_of
from memstrata.synth.notes import MIN_COVERAGE, OrganizedNotes, organize_lines
from memstrata.text.perspective import unname_placeholders

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
#: Relations a question may name its subject by ("my sister"), as stems.
_RELATION_STEMS = frozenset(lexical.stem(r) for r in vocab.RELATIONS)


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
                "count": ("count",), "amount": ("amount",),
                "person": ("person", "person:group", "person:participant"),
                "place": ("place", "place:common")}
#: Kinds whose answer is a value the evidence must state: without one, abstain.
_STATED_KINDS = frozenset({"duration", "amount"})
#: Answer types that abstain without a span of their kind (a fallback span would be a guess).
_HARD_KINDS = frozenset({"duration", "amount", "person", "place"})
#: How far down the ranking a line of the asked-for kind may come from: the first
#: ``TYPED_POOL`` lines, within ``TYPED_MARGIN`` of the best line's coverage. Kinds found
#: by a precise pattern (an age, a number of days) look further (``WIDE_*``): a line that
#: holds one is rarely a false match, and the alternative is to abstain.
TYPED_POOL = 5
TYPED_MARGIN = 0.15
WIDE_POOL = 10
WIDE_MARGIN = 0.3
_PRECISE_KINDS = frozenset({"duration", "amount"})
_WHERE = re.compile(r"^\s*where\b", re.IGNORECASE)


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


def _wanted(cues: Cues) -> tuple[str, ...]:
    """The span kinds that answer the question (empty: any span will do)."""
    if cues.expects is not None:
        return (cues.expects.kind,)
    return _TYPED_KINDS.get(cues.answer_type, ())


def _must_type(cues: Cues) -> bool:
    """Without a span of the kind asked for, abstain? Not for "when", which falls back on
    the date of the session that said it, nor for a bare "how many", which may count."""
    return cues.expects is not None or cues.answer_type in _HARD_KINDS


def _typed_line(cues: Cues, candidates: Sequence[Scored], best: Scored,
                lines: Sequence[EvidenceLine], about: "Callable[[EvidenceLine], bool]",
                ) -> Scored | None:
    """Among lines nearly as good as the best, the first that holds the kind asked for
    and is about what the question asks about; None when none does.

    "When" wants a stated date rather than the session's, "how long" a
    duration, "who" a name, "how old" an age: a slightly weaker line that has
    one beats a stronger line that does not. A reply ("She loved the garlic
    prawns") answers with what the question it replies to named ("Did Inês
    like Ramiro?"), so that question is looked at first.
    """
    wanted = _wanted(cues)
    # A named place before a common one ("Ireland" before "in the study program"), a
    # named person before people described ("a local organization"); "which city" wants
    # a named one.
    tiers = [(k,) for k in wanted] if cues.answer_type in ("place", "person") and \
        cues.expects is None else [wanted]
    if cues.answer_type == "place" and cues.expects is None and not _WHERE.search(
            cues.question):
        tiers = tiers[:1]
    asked = _question_before(best.line, lines)
    first = [best] + ([Scored(asked, best.score, best.coverage, True)] if asked else [])
    wide = cues.expects is not None or cues.answer_type in _PRECISE_KINDS
    pool, margin = (WIDE_POOL, WIDE_MARGIN) if wide else (TYPED_POOL, TYPED_MARGIN)
    near = [s for s in candidates[:pool] if s.coverage >= best.coverage - margin]
    for tier in tiers:
        for s in first:
            if span_for(cues, s.line)[1] in tier and about(s.line):
                return s
        found = [s for s in near if span_for(cues, s.line)[1] in tier and about(s.line)]
        # The user's own statement before the assistant's echo of it (unless the
        # question asks what the assistant said).
        for s in found:
            if s.line.speaker != relevance.ASSISTANT or cues.asks_assistant:
                return s
        if found:
            return found[0]
    return None


def _for_user(text: str) -> str:
    """An answer as the user reads it: no placeholder speaker ("User's desk": "your desk")."""
    return unname_placeholders(text, reader=True)


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
                return Generated(_for_user(found[0]), sources=[found[1]])
        if cues.relation_target is not None:
            name, kin_lines = _kin_answer(cues, lines)
            if name:
                return Generated(_for_user(name), sources=kin_lines[:1])
            return Generated(ABSTAIN_TEXT, abstained=True)
        asked = cues  # the question's own words, before the aliases the evidence adds
        cues = relevance.with_aliases(cues, lines)
        if notes is None:
            candidates = [s for s in relevance.rank(cues, lines) if s.coverage >= MIN_COVERAGE]
        else:
            candidates = notes.relevant
        yesno = cues.answer_type == "yesno"
        pair = inference.alternatives(asked.question) if yesno else None
        if pair is not None:
            # "A beach or the mountains?" asks which one: "Yes" answers nothing.
            text, support = inference.choose(pair, [s.line for s in candidates] or lines,
                                             cues.participants)
            return Generated(_for_user(text), sources=support)
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
        wanted = _wanted(cues)
        if wanted:
            subject = self._subject(asked)
            hood = Neighbourhood(lines, subject.stems & _RELATION_STEMS)
            chosen = _typed_line(cues, candidates, best, lines,
                                 lambda ln: hood.about(subject, ln))
            if chosen is None and not _must_type(cues):
                # "When" falls back on the session's date of the best line about it.
                chosen = next((s for s in [best, *candidates[:TYPED_POOL]]
                               if hood.about(subject, s.line)), None)
            if chosen is None:
                # A value of another kind ("1500" for "how many days"), or a line about
                # something else, is not an answer.
                return Generated(ABSTAIN_TEXT, abstained=True)
            best = chosen
        if kind == "list" or (cues.counting and kind not in ("count", "amount", "date", "duration")):
            items = notes.items if notes is not None else organize_lines(cues, lines, None).items
            if items:
                chosen_items = items[:_LIST_ITEMS]
                return Generated(_for_user(", ".join(i for i, _ in chosen_items)),
                                 sources=[ln for _, ln in chosen_items])
        text, how = span_for(cues, best.line)
        if kind == "count" and how != "count" and cues.expects is None:
            items = notes.items if notes is not None else organize_lines(cues, lines, None).items
            if items:
                return Generated(str(len(items)), sources=[ln for _, ln in items])
        if kind in _STATED_KINDS and how not in _TYPED_KINDS[kind] and cues.expects is None:
            # "How long did the race take?" with no duration in the evidence: a span about
            # the race is not an answer.
            return Generated(ABSTAIN_TEXT, abstained=True, sources=[best.line])
        return Generated(_for_user(text or best.line.text), sources=_cited(best.line, lines))

    @staticmethod
    def _subject(cues: Cues) -> Subject:
        return subject_of(cues, cues.expects.words if cues.expects is not None else ())


class LLMAnswer:
    """The generator model answers from the notes (or the raw evidence) and the draft."""

    def __init__(self, client: "ChatClient") -> None:
        self.client = client

    def generate(self, cues: Cues, notes: OrganizedNotes | None, lines: Sequence[EvidenceLine],
                 evidence_text: str, draft: Draft | None, asked_on: datetime | None,
                 trace: "Trace", step: int) -> Generated:
        from memstrata.evidence import llm_calls
        from memstrata.synth import prompts

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
