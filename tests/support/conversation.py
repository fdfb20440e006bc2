"""A small hand-written conversation history for controller tests, and a Memory to hold it.

Four dated sessions between a user and an assistant, each with a fact the
tests ask about: a trip (and a restaurant named only in the raw text of a
later session), half-marathon training that started "last week", a cat with
a name, and a promotion. The memory is the real embedded stack (extractive
builder, MiniLM ONNX, Qdrant Edge, tantivy, SQLite) in a temporary folder.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

MAYA = Scope(tenant_id="acme", user_id="maya")
ASKED_ON = datetime(2024, 7, 1, 12, 0)

_SESSIONS: list[tuple[str, datetime, list[tuple[str, str]]]] = [
    ("s1-trip-plans", datetime(2024, 3, 2, 9, 15), [
        ("I'm planning a trip to Lisbon in May with my sister Ines.",
         "Lisbon in May is lovely. Stay in Alfama and take a day trip to Sintra."),
        ("My sister loves seafood. Which places should we try?",
         "Go to the Time Out Market for variety, and book a table for grilled fish."),
    ]),
    ("s2-running", datetime(2024, 4, 10, 18, 0), [
        ("I started training for a half marathon last week.",
         "Great goal! Build up your long run slowly, about ten percent a week."),
        ("My left knee hurts after long runs.",
         "Add strength work for your hips and see a physio if the pain lasts."),
    ]),
    ("s3-back-home", datetime(2024, 5, 20, 20, 30), [
        ("We got back from Lisbon yesterday and Ines loved the shellfish at Cervejaria Ramiro.",
         "Wonderful, Cervejaria Ramiro is famous for its garlic prawns."),
        ("Also, I adopted a grey kitten and named her Pixel after my favourite game studio.",
         "Pixel is a lovely name! Kittens need lots of play at that age."),
    ]),
    ("s4-work", datetime(2024, 6, 1, 8, 45), [
        ("I got promoted to senior designer at Orbit Labs this week.",
         "Congratulations on the promotion! What will change in your role?"),
        ("I will lead the mobile app redesign team of four people.",
         "Leading a team of four is a great first step as a lead."),
    ]),
]


def sessions() -> list[Session]:
    out = []
    for sid, date, pairs in _SESSIONS:
        turns = [Turn(index=i, messages=[Message(role="user", content=u),
                                         Message(role="assistant", content=a)])
                 for i, (u, a) in enumerate(pairs, start=1)]
        out.append(Session(meta=SessionMeta(scope=MAYA, session_id=sid, session_date=date),
                           turns=turns))
    return out


def open_memory(data_dir: Path, embedder: MiniLMEmbedder, **settings: object) -> Memory:
    s = Settings(data_dir=data_dir, **settings)  # type: ignore[arg-type]
    memory = Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
                    open_lexical_store(s), open_doc_store(s))
    memory.ingest(sessions())
    return memory
