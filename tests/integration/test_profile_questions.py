"""The right person for each question: the controller reads the profiles first (offline).

On examples/sample_turns.jsonl (the issue's questions) and on turns written here
(a neighbour who looks after the cat, a move, a preference that changed, a
friend's job asked by name and by relation, attributes nobody stated), the
rule policy calls ``read_profile``, answers from the target's own bullets
with their source turns, and abstains when the target has no such attribute.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
ANA = Scope(tenant_id="t1", user_id="ana")


def _session(sid: str, date: str, *texts: tuple[str, str]) -> Session:
    turns = [Turn(index=i, messages=[Message(role="user", content=u, source_id=f"{sid}#{2*i-1}"),
                                     Message(role="assistant", content=a,
                                             source_id=f"{sid}#{2*i}")])
             for i, (u, a) in enumerate(texts, start=1)]
    return Session(meta=SessionMeta(scope=ANA, session_id=sid,
                                    session_date=datetime.fromisoformat(date)), turns=turns)


def own_sessions() -> list[Session]:
    """Ana's turns: a friend's job, a cat and the neighbour who minds it, a move, a change."""
    return [
        _session("a1", "2022-06-01T10:00:00",
                 ("I live in Madrid and I work as a nurse. I love running.",
                  "Madrid is great for running in the morning."),
                 ("My friend Karim works as an architect. I have a cat named Miso.",
                  "Cats and architects, a good mix.")),
        _session("a2", "2023-09-10T10:00:00",
                 ("We are flying to Oslo next week.", "Who will take care of Miso?"),
                 ("Our neighbour Greta will look after Miso while we are away.",
                  "Greta sounds kind.")),
        _session("a3", "2024-02-05T10:00:00",
                 ("I moved to Valencia last month.", "Valencia has lovely beaches."),
                 ("I don't like running anymore, I prefer swimming now.",
                  "Swimming is easier on the knees.")),
    ]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Memory]:
    s = Settings(data_dir=tmp_path_factory.mktemp("profile-questions"))  # type: ignore[call-arg]
    m = Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
               open_lexical_store(s), open_doc_store(s))
    m.ingest([*read_file(SAMPLE).sessions, *own_sessions()])
    yield m
    m.close()


@pytest.fixture(scope="module")
def controller(memory: Memory) -> Controller:
    return Controller(memory, ControllerSettings(policy="rules"))


def _tools(a: Any) -> list[str]:
    return [s.tool for s in a.steps]


# -- the issue's questions on the example file ---------------------------------------------
@pytest.mark.parametrize(("question", "expected", "source_turn"), [
    ("Who eats fish?", "Inês", "2024-03-02-trip#5"),
    ("Who recommended Cervejaria Ramiro?", "the assistant", "2024-03-02-trip#4"),
    ("What does Inês like to eat?", "fish", "2024-03-02-trip#5"),
    ("What does Inês like to eat?", "garlic prawns", "2024-05-20-after-trip#3"),
    ("What kind of person am I?", "vegetarian", "2024-03-02-trip#5"),
    ("What kind of person am I?", "running", "2024-04-10-running#1"),
])
def test_the_issue_questions_are_answered_from_the_right_profile(
        controller: Controller, question: str, expected: str, source_turn: str) -> None:
    a = controller.answer(MAYA, question)
    assert not a.abstained and expected in a.answer
    assert "read_profile" in _tools(a) and a.summary.profiles_read >= 1
    assert any(source_turn in s.source_ids and s.text.startswith("Profile of ")
               for s in a.sources), [s.text for s in a.sources]


def test_what_ines_likes_is_not_the_users_diet(controller: Controller) -> None:
    a = controller.answer(MAYA, "What does Inês like to eat?")
    assert "vegetarian" not in a.answer and all("Inês" in s.text for s in a.sources)


@pytest.mark.parametrize("question", ["What is my sister's job?", "How old is my sister?",
                                      "What is Inês's job?"])
def test_an_attribute_the_sister_never_stated_abstains(controller: Controller,
                                                       question: str) -> None:
    a = controller.answer(MAYA, question)
    assert a.abstained, a.answer
    step = next(s for s in a.steps if s.tool == "read_profile")
    assert "not stated" in (step.note or "")


# -- the same kinds on turns written here ------------------------------------------------------
@pytest.mark.parametrize(("question", "expected", "source"), [
    ("Who will look after my cat?", "Greta", "a2#3"),
    ("Who is taking care of Miso?", "Greta", "a2#3"),
    ("Where do I live now?", "Valencia", "a3#1"),
    ("When did I move?", "January 2024", "a3#1"),
    ("Where did I live before?", "Madrid", "a1#1"),
    ("What is Karim's job?", "architect", "a1#3"),
    ("What is my friend's job?", "architect", "a1#3"),
    ("What does my friend do for work?", "architect", "a1#3"),
    ("Which city am I living in these days?", "Valencia", "a3#1"),
    ("Who is my neighbour?", "Greta", "a2#3"),
    ("What animals do I have at home?", "Miso", "a1#3"),
])
def test_own_turns_answer_from_the_target_with_its_sources(
        controller: Controller, question: str, expected: str, source: str) -> None:
    a = controller.answer(ANA, question)
    assert not a.abstained and a.answer == expected, a.answer
    assert a.sources and source in a.sources[0].source_ids


def test_a_preference_that_changed_answers_with_the_new_one(controller: Controller) -> None:
    a = controller.answer(ANA, "What do I like?")
    assert "swimming" in a.answer and "running" not in a.answer


@pytest.mark.parametrize("question", ["How old is Karim?", "What is Greta's job?",
                                      "Where does my friend live?",
                                      "What is my neighbour's diet?"])
def test_an_attribute_nobody_stated_abstains(controller: Controller, question: str) -> None:
    a = controller.answer(ANA, question)
    assert a.abstained, a.answer
    assert not any("nurse" in s.text or "Madrid" in s.text for s in a.sources)


def test_without_profiles_the_tool_is_not_read(memory: Memory) -> None:
    settings = ControllerSettings(policy="rules").without(["profiles"])
    assert settings.ablations == ["profiles"]
    a = Controller(memory, settings).answer(ANA, "What is my friend's job?")
    assert "read_profile" not in _tools(a) and a.summary.profiles_read == 0


def test_questions_that_ask_no_attribute_do_not_read_profiles(controller: Controller) -> None:
    a = controller.answer(MAYA, "How much money did we budget for Lisbon?")
    assert "read_profile" not in _tools(a) and "1500 euros" in a.answer
