"""Turn grouping and the sliding windows the L0 builder reads.

A turn opens at a user message and collects the replies after it, so one
exchange stays together. Windows are ``size`` turns wide and overlap by
``overlap`` turns; the overlapping turn is context for the next window, never
summarised twice. A window whose text passes ``max_chars`` is shortened (its
tail moves to the next window), but always keeps at least one turn to
summarise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memstrata.model import Message, Turn


def group_turns(messages: Iterable[Message], first_index: int = 1) -> list[Turn]:
    """Group messages into turns: a user message starts a new turn.

    Leading assistant messages (a session that opens with the assistant) form
    a turn of their own, so nothing is dropped.
    """
    turns: list[Turn] = []
    current: list[Message] = []
    for m in messages:
        if m.role == "user" and current:
            turns.append(Turn(index=first_index + len(turns), messages=current))
            current = []
        current.append(m)
    if current:
        turns.append(Turn(index=first_index + len(turns), messages=current))
    return turns


@dataclass(frozen=True, slots=True)
class WindowSpan:
    """Positions (0-based, into the turn list) of one window."""

    start: int
    stop: int
    #: First position that this window summarises; before it is context.
    first_target: int

    def targets(self) -> range:
        return range(self.first_target, self.stop)


def turn_chars(turn: Turn) -> int:
    return sum(len(m.content) + len(m.who) + 2 for m in turn.messages)


def plan_windows(
    turns: Sequence[Turn], size: int = 4, overlap: int = 1, max_chars: int = 6000
) -> list[WindowSpan]:
    """Cover every turn exactly once as a target.

    Window ``i`` starts ``overlap`` turns before the first unsummarised turn
    (when there is one), then grows up to ``size`` turns while it fits in
    ``max_chars``.
    """
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got {size=} {overlap=}")
    spans: list[WindowSpan] = []
    nxt = 0
    n = len(turns)
    while nxt < n:
        start = max(0, nxt - overlap)
        used = sum(turn_chars(turns[i]) for i in range(start, nxt))
        stop = nxt
        while stop < n and stop - start < size:
            cost = turn_chars(turns[stop])
            if stop > nxt and used + cost > max_chars:
                break
            used += cost
            stop += 1
        spans.append(WindowSpan(start=start, stop=stop, first_target=nxt))
        nxt = stop
    return spans
