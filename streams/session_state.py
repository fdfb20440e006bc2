"""What the processor keeps per session: a batch's share, a held window, a table entry.

The processor groups a batch by session (:class:`Group`), holds the
incomplete last window of a session while the worker is behind its topic
(:class:`Held`), and keeps one entry per open session in the session table (a
plain dict, matched by :func:`same_session`). These shapes carry no behaviour
of their own, so they live apart from the processor's loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memstrata.model import Message, Scope, SessionMeta

__all__ = ["Group", "Held", "bare_meta", "but_last", "same_session"]


@dataclass
class Group:
    """One session's share of a batch: its messages and the records they came from."""

    meta: SessionMeta
    messages: list[Message] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    #: Event times of those records (for the freshness metric).
    stamps: list[float] = field(default_factory=list)
    #: The partition its records came from (None: no record, a held window's build).
    partition: int | None = None


@dataclass
class Held:
    """A session whose incomplete last window the writer holds unbuilt."""

    meta: SessionMeta
    #: When its last message was held (``time.monotonic``); built ``hold_max_s`` after,
    #: so a session that went quiet while the worker is behind still gets built, and one
    #: that keeps sending (its next message builds or holds it anyway) is not rebuilt
    #: provisionally every ``hold_max_s`` of a long backlog.
    since: float
    #: Event times of its records not yet searchable (observed when it is built).
    stamps: list[float] = field(default_factory=list)
    #: Its records' partition: after a rebalance the new owner builds the window.
    partition: int | None = None


def bare_meta(key: tuple[Scope, str]) -> SessionMeta:
    """A session known only by key (the writer keeps the date and labels it stored)."""
    return SessionMeta(scope=key[0], session_id=key[1])


def but_last(state: dict[str, Any]) -> dict[str, Any]:
    """A table entry without its last event time (what says whether it must be rewritten)."""
    return {k: v for k, v in state.items() if k != "last"}


def same_session(state: Any, scope: Scope, session_id: str | None) -> bool:
    """Whether a table entry is this user's session (any of the user's, if None)."""
    if not isinstance(state, dict):
        return False
    if (state.get("tenant_id"), state.get("user_id")) != (scope.tenant_id, scope.user_id):
        return False
    return session_id is None or state.get("session_id") == session_id
