"""A generated conversation for append tests: many turns, uneven lengths.

Deterministic for a seed. Some messages are long enough that a window of four
turns passes a small ``l0_max_window_chars``, so windows are cut by size as
well as by turn count; some turns are opened by the assistant.
"""

from __future__ import annotations

import random
from datetime import datetime

from memstrata.model import Message, Scope, SessionMeta

ALICE = Scope(tenant_id="acme", user_id="alice")

_TOPICS = [
    "I adopted a rescue dog called Biscuit and she hates the vacuum cleaner.",
    "My sister Lena moved to Porto last month for a job at a bakery.",
    "We are planning a hiking trip to the Dolomites in September.",
    "I started learning the cello again after ten years without practice.",
    "The kitchen renovation went over budget by about two thousand euros.",
    "My manager asked me to lead the migration of our billing service.",
    "I ran my first 10k race on Sunday in 52 minutes.",
    "We visited the botanical garden and the orchids were in bloom.",
]
_REPLIES = [
    "That sounds exciting; how are you feeling about it?",
    "Good for you. Keep a log so you can see your progress.",
    "Remember to rest and drink plenty of water.",
    "Would you like a checklist for that?",
]


def messages(n_turns: int, seed: int = 7) -> list[Message]:
    """About ``n_turns`` turns of messages, each with a unique source id."""
    rnd = random.Random(seed)
    out: list[Message] = []
    k = 0

    def add(role: str, text: str) -> None:
        nonlocal k
        k += 1
        out.append(Message(role=role, content=text, speaker="Alice" if role == "user" else None,
                           source_id=f"m{k}"))

    if rnd.random() < 0.5:
        add("assistant", "Welcome back! What happened this week?")
    for _ in range(n_turns):
        topic = rnd.choice(_TOPICS)
        body = topic if rnd.random() < 0.8 else " ".join([topic] * rnd.randint(8, 20))
        add("user", body)
        for _ in range(rnd.randint(0, 2)):
            add("assistant", rnd.choice(_REPLIES))
    return out


def meta(session_id: str = "s1") -> SessionMeta:
    return SessionMeta(scope=ALICE, session_id=session_id,
                       session_date=datetime(2024, 6, 3, 10, 0))
