"""The extractive answer quotes only a span of the kind the question asks for.

Each reproduction of issue 34 (a budget given as a trip's length, a sentence
about a trip given as a sister's job or age, a colour missed, the builder's
"User" in an answer) plus unseen variants of each kind: other units, other
attributes, other subjects. The lines are built here, so the rules are tested
without a store; ``test_sample_abstain`` runs the same questions end to end.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from memstrata.evidence.answer_types import Expect, expected, find
from memstrata.evidence.cues import detect_cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.subject import subject_of
from memstrata.evidence.trace import Trace
from memstrata.model import Layer
from memstrata.synth.answer import ExtractiveAnswer, is_abstention
from memstrata.text.perspective import unname_placeholders

PEOPLE = ("User", "Assistant")


def line(text: str, session: str = "s1", turn: int = 1, speaker: str | None = "User",
         layer: Layer = Layer.L3) -> EvidenceLine:
    return EvidenceLine(session, datetime(2024, 6, 1, 10), layer, text, (turn,), speaker,
                        about=(speaker,) if speaker else ())


def ask(question: str, *lines: EvidenceLine) -> str:
    cues = detect_cues(question, None, PEOPLE)
    return ExtractiveAnswer().generate(cues, None, list(lines), "", None, None, Trace(),
                                       0).answer


# -- what each question expects ---------------------------------------------------------------


@pytest.mark.parametrize(("question", "kind", "unit"), [
    ("How many days is the Lisbon trip?", "quantity", "day"),
    ("How many nights did we stay in Rome?", "quantity", "night"),
    ("How many hives do I have?", "quantity", "hive"),
    ("How many video game tournaments has Nate won?", "quantity", "tournament"),
    ("How many children does my cousin have?", "quantity", "child"),
    ("How many times did I visit the dentist?", "times", "time"),
    ("How often do I swim?", "frequency", None),
    ("How old is my sister?", "age", None),
    ("At what age did my father retire?", "age", None),
    ("What is my sister's job?", "occupation", None),
    ("What does my brother do for a living?", "occupation", None),
    ("What's my wife's occupation?", "occupation", None),
    ("What colour is my stapler?", "colour", None),
    ("Which color did I paint the fence?", "colour", None),
    ("How far do I walk?", "distance", None),
    ("How far is the office from my flat?", "distance", None),
    ("How tall is my son?", "measure", "length"),
    ("How much does my dog weigh?", "measure", "weight"),
    ("What temperature should the oven be?", "measure", "temperature"),
    ("How much flour goes into the bread?", "measure", "any"),
    ("What time does my train leave?", "clock", None),
    # the attribute named as a noun
    ("What is my sister's age?", "age", None),
    ("What's the colour of my car?", "colour", None),
    ("What is the distance to my office?", "distance", None),
    ("What is my son's height?", "measure", "length"),
])
def test_the_kind_a_question_expects(question: str, kind: str, unit: str | None):
    e = expected(question)
    assert e is not None and e.kind == kind and e.unit == unit


@pytest.mark.parametrize("question", [
    "What career path has Caroline decided to pursue?",  # a path, not a job title
    "What did I buy for the party?",
    "How much money did we budget?",  # money: cues' amount reading, not a measure
    "What time of year do I go skiing?",
    "What size shoes do I wear?",  # sizes have no unit to check
])
def test_questions_of_no_particular_kind(question: str):
    cues = detect_cues(question, None, PEOPLE)
    assert cues.expects is None


@pytest.mark.parametrize(("question", "text", "value"), [
    ("How many days is the Lisbon trip?", "We have about 1500 euros for five days.", "five days"),
    ("How many weeks did the course last?", "It ran for 6 weeks in spring.", "6 weeks"),
    ("How many hives do I have?", "Twelve hives, and I'm adding four more.", "Twelve"),
    ("How many kids does Ana have?", "Ana has 3 kids and a dog.", "3"),
    ("How old is my sister?", "My sister Inês is 34 and lives in Porto.", "34"),
    ("How old is my dog?", "My dog Biscuit is a three-year-old beagle.", "three-year-old"),
    ("How old is my nephew?", "He turned seven last week.", "seven"),
    ("What is my sister's job?", "She works as a pediatric nurse in Leeds.", "pediatric nurse"),
    ("What's my wife's job?", "She is an intensive care nurse.", "intensive care nurse"),
    ("What colour is my stapler?", "My stapler is red.", "red"),
    ("What color is my bike?", "My bike is dark green with a basket.", "dark green"),
    ("How far do I run?", "I run about 5 km every morning.", "about 5 km"),
    ("How far is the office?", "It's a 20-minute walk from home.", "20-minute walk"),
    ("How much does my dog weigh?", "My dog weighs 14 kg.", "14 kg"),
    ("How tall is my son?", "My son is 140 cm tall now.", "140 cm"),
    ("How often do I swim?", "I swim twice a week at the pool.", "twice a week"),
    ("What time does my shift start?", "My shift starts at 7:30 a.m.", "7:30 a.m."),
])
def test_a_value_of_the_kind_is_found(question: str, text: str, value: str):
    e = expected(question)
    assert e is not None
    assert find(e, text) == value


@pytest.mark.parametrize(("question", "text"), [
    # a number of another unit is never the answer
    ("How many days is the Lisbon trip?", "We have about 1500 euros for the trip."),
    ("How many kilometres did I run?", "I ran 10 miles on Sunday."),
    ("How many nights did we camp?", "We camped for three days."),
    ("How many hives do I have?", "I sell honey at 12 markets."),
    ("How much does my dog weigh?", "My dog is 3 years old and 60 cm tall."),
    ("How tall is my son?", "My son weighs 30 kg."),
    # other kinds
    ("How old is my sister?", "I'm planning a trip to Lisbon with my sister."),
    ("What is my sister's job?", "I'm planning a trip to Lisbon in May with my sister Inês."),
    ("What colour is my car?", "I drive a 2016 Mazda3 with 140,000 km on it."),
    ("How far do I walk?", "I walk him every morning before work."),
    ("What time does my shift start?", "My shift starts early on Mondays."),
    ("How often do I swim?", "I swim in the lake."),
])
def test_no_value_of_the_kind(question: str, text: str):
    e = expected(question)
    assert e is not None
    assert find(e, text) is None


def test_a_count_is_not_read_across_another_number():
    e = Expect("quantity", "day")
    assert find(e, "1500 euros for five days") == "five days"
    assert find(e, "1500 euros for the trip, 5 of us") is None


# -- what a question is about -----------------------------------------------------------------


@pytest.mark.parametrize(("question", "about"), [
    ("How old is my sister?", {"sister"}),
    ("What colour is my stapler?", {"stapler"}),
    ("How many days is the Lisbon trip?", {"lisbon", "trip"}),
    ("When did Caroline go to the support group in June?", {"support", "group"}),
])
def test_subject_drops_kind_words_participants_and_time(question: str, about: set[str]):
    cues = detect_cues(question, None, ("Caroline", "Melanie"))
    skip = cues.expects.words if cues.expects else ()
    assert set(subject_of(cues, skip).stems) == about


# -- the extractive answer ----------------------------------------------------------------------


def test_trip_length_is_the_days_not_the_budget():
    answer = ask("How many days is the Lisbon trip?",
                 line("I'm planning a trip to Lisbon in May with my sister Inês."),
                 line("We have about 1500 euros for five days."))
    assert answer == "five days"


def test_a_trip_elsewhere_does_not_answer_for_lisbon():
    answer = ask("How many days is the Lisbon trip?",
                 line("I'm planning a trip to Lisbon in May."),
                 line("Last year I spent six days on a trip to Porto.", "s2", 4))
    assert is_abstention(answer), answer


@pytest.mark.parametrize("question", [
    "What is my sister's job?", "How old is my sister?", "What colour is my sister's car?",
    "How far does my sister commute?", "What does my sister do for a living?",
])
def test_a_sentence_about_the_sister_answers_none_of_her_attributes(question: str):
    answer = ask(question, line("I'm planning a trip to Lisbon in May with my sister Inês."),
                 line("We have about 1500 euros for five days."))
    assert is_abstention(answer), answer


def test_an_attribute_of_another_subject_is_not_the_answer():
    """The age in the evidence is the dog's: asked about the sister, abstain."""
    lines = [line("My dog Biscuit is a three-year-old beagle.", "s3", 1),
             line("My sister Inês lives in Porto.", "s4", 1)]
    assert is_abstention(ask("How old is my sister?", *lines))
    assert ask("How old is my dog?", *lines) == "three-year-old"


def test_the_relation_named_by_its_name_counts_as_the_subject():
    lines = [line("My sister Inês loves Porto.", "s1", 1),
             line("Inês is 34 and works as a pharmacist.", "s2", 3)]
    assert ask("How old is my sister?", *lines) == "34"
    assert ask("What is my sister's job?", *lines) == "pharmacist"


@pytest.mark.parametrize(("question", "text", "value"), [
    ("What colour is my stapler?", "My stapler is red.", "red"),
    ("What color is my umbrella?", "My umbrella is bright yellow.", "bright yellow"),
    ("What colour is my brother's van?", "My brother's van is navy blue.", "navy blue"),
])
def test_colour_is_answered_from_the_only_line(question: str, text: str, value: str):
    assert ask(question, line(text)) == value


def test_colour_without_one_abstains():
    assert is_abstention(ask("What colour is my car?",
                             line("I drive a 2016 Mazda3 with 140,000 km on it.")))


def test_distance_of_another_activity_or_none_abstains():
    lines = [line("My dog Biscuit is a three-year-old beagle.", "s3", 1),
             line("I walk him every morning before work.", "s3", 1)]
    assert is_abstention(ask("How far do I walk?", *lines))
    assert is_abstention(ask("How far do I cycle?",
                             line("I run about 5 km every morning.", "s5", 2)))
    assert ask("How far do I run?", line("I run about 5 km every morning.")) == "about 5 km"


def test_where_answers_with_the_place_in_the_users_words():
    built = line("User's stapler is red and User keeps it in the top drawer of User's desk.",
                 layer=Layer.L1, speaker=None)
    answer = ask("Where do I keep my stapler?", built)
    assert answer == "in the top drawer of your desk"
    assert ask("Where do I keep my passport?",
               line("I keep my passport in the bottom drawer of my dresser.")) == \
        "in the bottom drawer of my dresser"


@pytest.mark.parametrize(("question", "text"), [
    ("Where do I keep my stapler?", "My stapler is red."),
    ("Where did I park the car?", "I parked in the morning before work."),
])
def test_where_without_a_place_abstains(question: str, text: str):
    assert is_abstention(ask(question, line(text)))


@pytest.mark.parametrize(("question", "text", "value"), [
    ("How many nights did we stay in Rome?", "We stayed in Rome for four nights.",
     "four nights"),
    ("How many hours a week do I volunteer?", "I volunteer three hours a week at the food bank.",
     "three hours"),
    ("How much does my cat weigh?", "My cat weighs about 4 kg.", "about 4 kg"),
    ("What time does my train leave?", "My train leaves at 6:45 pm.", "6:45 pm"),
    ("How often do I call my mother?", "I call my mother every Sunday.", "every Sunday"),
    ("How many times did I visit the dentist?", "I visited the dentist twice this year.",
     "twice"),
])
def test_unseen_kinds_and_units_are_answered(question: str, text: str, value: str):
    assert ask(question, line(text)) == value


@pytest.mark.parametrize(("question", "text"), [
    ("How many nights did we stay in Rome?", "We stayed in Rome and spent 300 euros."),
    ("How many hours a week do I volunteer?", "I volunteer at the food bank with 4 friends."),
    ("How much does my cat weigh?", "My cat is 4 years old."),
    ("What time does my train leave?", "My train leaves from platform 9."),
    ("How often do I call my mother?", "I called my mother about the 2 tickets."),
])
def test_unseen_kinds_with_a_number_of_another_kind_abstain(question: str, text: str):
    assert is_abstention(ask(question, line(text)))


def test_internal_names_never_reach_an_answer():
    built = line("User's brother works as a carpenter in Leeds.", layer=Layer.L1, speaker=None)
    assert "User" not in ask("What is my brother's job?", built)
    assert unname_placeholders("User's stapler is red and User keeps it.") == \
        "The user's stapler is red and the user keeps it."
    assert unname_placeholders("User's desk", reader=True) == "your desk"


def test_built_lines_are_shown_without_placeholders_raw_lines_verbatim():
    built = line("User keeps it in User's desk.", layer=Layer.L1, speaker=None)
    raw = line("The User table has 3 columns.")  # the user's own words stay as written
    assert built.shown == "The user keeps it in the user's desk."
    assert raw.shown == "The User table has 3 columns."
