"""Which L0 windows of a growing session must be (re)built.

:func:`~memstrata.layers.windowing.plan_windows` is prefix-stable: windows
planned over the first ``k`` turns are the windows planned over the whole
session, except the last one, which may still grow. So after an append only
the windows whose span or content changed are rebuilt: each planned window
gets a digest of everything its units depend on (index fingerprint, session
date, the turns it reads and which of them it summarises), and the session
keeps the digests of its current plan. A window whose digest is already there
produced the units that are stored for its targets, and is left alone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstrata.ids import content_hash
from memstrata.layers.windowing import WindowSpan, plan_windows
from memstrata.model import SessionMeta, Turn

#: Where a session's plan is kept in the doc store (a cached-layer slot).
PLAN_LAYER, PLAN_KEY = "L0-plan", "windows-1"


def turn_digest(turn: Turn) -> str:
    """Changes whenever anything an L0 unit reads from the turn changes."""
    return content_hash(str(turn.index), *(
        f"{m.role}\x1e{m.who}\x1e{m.source_id or ''}\x1e{m.content}" for m in turn.messages))


@dataclass(frozen=True, slots=True)
class PlannedWindow:
    span: WindowSpan
    digest: str
    #: Turn indices this window summarises.
    targets: tuple[int, ...]


@dataclass
class SessionPlan:
    """A session's windows now, and what of them is already stored."""

    windows: list[PlannedWindow]
    stale: list[PlannedWindow] = field(default_factory=list)
    #: Turn indices whose window may still grow (last window short and session open).
    provisional: set[int] = field(default_factory=set)

    def payload(self, fingerprint: str, closed: bool,
                skip: Collection[str] = ()) -> dict[str, Any]:
        """What to store; windows in ``skip`` (built by the fallback) stay stale."""
        return {"fingerprint": fingerprint, "closed": closed,
                "windows": [w.digest for w in self.windows if w.digest not in skip]}


def plan_session(
    meta: SessionMeta,
    turns: Sequence[Turn],
    *,
    size: int,
    overlap: int,
    max_chars: int,
    fingerprint: str,
    stored: dict[str, Any] | None,
    closed: bool,
) -> SessionPlan:
    """Plan ``turns`` (in index order) and mark the windows not stored as they are now."""
    digests = [turn_digest(t) for t in turns]
    date = meta.session_date.isoformat() if meta.session_date else ""
    windows = []
    for span in plan_windows(turns, size, overlap, max_chars):
        d = content_hash(fingerprint, date, str(span.first_target - span.start),
                         *digests[span.start : span.stop])
        windows.append(PlannedWindow(span, d, tuple(turns[i].index for i in span.targets())))
    have = set(stored.get("windows", ())) if stored else set()
    plan = SessionPlan(windows=windows, stale=[w for w in windows if w.digest not in have])
    if windows and not closed:
        last = windows[-1].span
        if last.stop == len(turns) and last.stop - last.start < size:
            plan.provisional = set(windows[-1].targets)
    return plan
