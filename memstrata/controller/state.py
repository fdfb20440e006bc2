"""What the controller knows while it works on one question.

The evidence set V holds every view read so far (an :class:`Evidence` per
session, layer and turn range); reading the same view twice does not grow it,
which is what makes "reflection added nothing" (|V_t| = |V_t-1|) a usable
stopping rule. Beside V the state keeps the budgets of Table 5 (drilled
sessions, raw turns, reflections, nudges) and, for the extractive notes and
answer, every read split into lines that remember their session, turn and date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memstrata.evidence.cues import Cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.model import Evidence, Layer, Scope, SessionHit, SessionMeta
from memstrata.profiles.query import ProfileAnswer


class LineSet(list[EvidenceLine]):
    """The evidence lines read so far, plus how well the retriever matched each turn.

    ``turn_boost`` carries the hybrid retriever's judgement (dense and BM25 at
    once) down to the lines: a line from a turn that a search ranked high is
    more likely to be the one that answers, even when it shares few words
    with the question ("guinea pig" for "pet").
    """

    def __init__(self) -> None:
        super().__init__()
        self.turn_boost: dict[tuple[str, int], float] = {}


@dataclass
class ControllerState:
    """Evidence, budgets and bookkeeping for one question."""

    scope: Scope
    question: str
    asked_on: datetime | None
    cues: Cues
    #: All of the user's sessions (the haystack), by id.
    sessions: dict[str, SessionMeta] = field(default_factory=dict)
    #: Who talks in the user's conversations ("Caroline", "Melanie"; "User", "Assistant").
    participants: tuple[str, ...] = ()
    evidence: dict[tuple[str, int, tuple[int, ...]], Evidence] = field(default_factory=dict)
    lines: LineSet = field(default_factory=LineSet)
    #: Every session a search returned, with its best score so far.
    candidates: dict[str, SessionHit] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)
    #: Deepest layer read per drilled session (L1-L3 reads; search results are not drills).
    drilled: dict[str, Layer] = field(default_factory=dict)
    raw_read: dict[str, set[int]] = field(default_factory=dict)
    notes_read: set[str] = field(default_factory=set)
    raw_turns_used: int = 0
    reflections: int = 0
    nudges: int = 0
    size_at_reflection: int | None = None
    #: Relative phrases of the question and what they mean ("last year" -> "2022").
    dates: dict[str, str] = field(default_factory=dict)
    subquestions: list[str] = field(default_factory=list)
    steps: int = 0
    converged: bool = False
    stop_reason: str | None = None
    draft: str | None = None
    errors: int = 0
    #: What ``read_profile`` found (the last read); None when no profile was read.
    profile: ProfileAnswer | None = None
    #: How many times the profiles (the cross-session layer) were read.
    profile_reads: int = 0

    @property
    def size(self) -> int:
        """|V|."""
        return len(self.evidence)

    @property
    def anchor(self) -> datetime | None:
        """The question date, or else the date of the user's latest session."""
        if self.asked_on is not None:
            return self.asked_on
        dates = [m.session_date for m in self.sessions.values() if m.session_date]
        return max(dates) if dates else None

    def add(self, evidence: Evidence, lines: list[EvidenceLine]) -> bool:
        """Put a view into V; False (and nothing added) when V already holds it."""
        if evidence.key in self.evidence:
            return False
        self.evidence[evidence.key] = evidence
        self.lines.extend(lines)
        return True

    def mark_drilled(self, session_id: str, layer: Layer) -> None:
        if layer > self.drilled.get(session_id, Layer.L0):
            self.drilled[session_id] = layer

    def grew_since_reflection(self) -> bool:
        return self.size > (self.size_at_reflection or 0)

    def ranked_candidates(self) -> list[SessionHit]:
        return sorted(self.candidates.values(), key=lambda h: (-h.score, h.session_id))


def render_evidence(state: ControllerState, max_chars: int) -> str:
    """V as text for an LLM: sessions in date order, coarse views before fine ones.

    Over ``max_chars`` the search summaries (L0) go first, since every
    drilled session also has a finer view; what is still too long is clipped.
    """
    items = sorted(state.evidence.values(),
                   key=lambda e: (e.session_date is None, e.session_date, e.session_id,
                                  int(e.layer), e.turn_indices))

    def join(evs: list[Evidence]) -> str:
        return "\n\n".join(
            (e.content if e.layer != Layer.L0 else
             f"## L0 search summaries · Session {e.session_id} "
             f"(date={e.session_date.strftime('%Y/%m/%d') if e.session_date else 'unknown'})\n"
             f"{e.content}")
            for e in evs)

    text = join(items)
    profile = profile_block(state)
    if profile:
        text = f"{profile}\n\n{text}" if text else profile
    if len(text) > max_chars:
        text = join([e for e in items if e.layer != Layer.L0])
    if len(text) > max_chars:
        text = text[: max_chars - 12].rstrip() + "\n[clipped]"
    return text


def profile_block(state: ControllerState) -> str:
    """The profile bullets read for this question, with their sources ("" when none)."""
    found = state.profile
    if found is None or not (found.hits or found.abstain):
        return ""
    return "## Profiles (cross-session)\n" + found.render()
