"""Simple questions a new user asks of the README's example data, answered offline.

The memory is ``examples/sample_turns.jsonl`` ingested for real (extractive
builder, MiniLM, the embedded stores); the rule policy and the extractive
answer must give the answer a person would accept, cite the user's own
statement as the source, and abstain when the data does not say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
LEO = Scope(tenant_id="acme", user_id="leo")


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory, embedder):
    s = Settings(data_dir=tmp_path_factory.mktemp("sample"))  # type: ignore[call-arg]
    memory = Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
                    open_lexical_store(s), open_doc_store(s))
    memory.ingest(read_file(SAMPLE).sessions)
    yield Controller(memory, ControllerSettings(policy="rules"))
    memory.close()


@pytest.mark.parametrize(("scope", "question", "expected"), [
    (MAYA, "What is my sister's name?", "Inês"),
    (MAYA, "What is my sister called?", "Inês"),
    (MAYA, "Who did I travel to Lisbon with?", "Inês"),
    (MAYA, "Who is my sister?", "Inês"),
    (MAYA, "What is the name of my cat?", "Sardinha"),
])
def test_names_and_relations(controller: Controller, scope: Scope, question: str,
                             expected: str):
    a = controller.answer(scope, question)
    assert not a.abstained
    assert a.answer == expected
    assert a.sources and not a.sources[0].text.startswith("Assistant:")


def test_amount_question_quotes_the_amount_the_user_gave(controller: Controller):
    a = controller.answer(MAYA, "How much money did we budget for Lisbon?")
    assert "1500 euros" in a.answer and not a.abstained
    assert a.sources[0].text.startswith("User:")  # the user's budget, not the assistant's echo


@pytest.mark.parametrize(("question", "expected"), [
    ("Am I vegetarian?", "Yes"),
    ("Do I have a cat?", "Yes"),
    ("Do I eat fish?", "No"),  # "I'm vegetarian ..., but Inês eats fish"
])
def test_yes_no_questions_answer_with_their_evidence(controller: Controller, question: str,
                                                     expected: str):
    a = controller.answer(MAYA, question)
    assert a.answer == expected
    assert a.sources and not a.sources[0].text.startswith("Assistant:")


def test_yes_no_evidence_for_vegetarian_is_the_users_statement(controller: Controller):
    a = controller.answer(MAYA, "Am I vegetarian?")
    assert "vegetarian since January" in a.sources[0].text


def test_list_of_languages(controller: Controller):
    a = controller.answer(LEO, "What languages will I use at work?")
    assert not a.abstained
    assert "C++" in a.answer and "Rust" in a.answer


@pytest.mark.parametrize("question", [
    "How long did the half marathon take me?",
    "What is my brother's name?",
])
def test_abstains_when_the_data_does_not_say(controller: Controller, question: str):
    a = controller.answer(MAYA, question)
    assert a.abstained, a.answer


def test_answer_from_a_question_cites_the_reply(controller: Controller):
    a = controller.answer(MAYA, "Which seafood place did my sister like?")
    assert a.answer == "Cervejaria Ramiro"
    assert a.sources[0].text == "User: She loved the garlic prawns."


@pytest.mark.parametrize(("question", "expected"), [
    ("Who is Inês?", "your sister"),
    ("Who is Sardinha?", "your cat"),
])
def test_who_is_a_name_answers_what_they_are_to_the_user(controller: Controller,
                                                         question: str, expected: str):
    assert controller.answer(MAYA, question).answer == expected


def test_other_tenants_maya_is_another_person(controller: Controller):
    a = controller.answer(Scope(tenant_id="globex", user_id="maya"), "How many hives do I have?")
    assert a.answer == "Twelve"
    a = controller.answer(MAYA, "How many hives do I have?")
    assert a.answer != "Twelve"


def test_what_the_assistant_said_is_read_below_the_users_facts(controller: Controller):
    """L1 holds the user's facts only, so a question about "you" reads L2 and L3."""
    a = controller.answer(MAYA, "What did you tell me to do about my knee?")
    assert "Rest" in a.answer
    assert a.sources[0].text.startswith("Assistant:")
    assert any(s.tool == "read_turns" for s in a.steps)
