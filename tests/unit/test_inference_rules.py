"""The question readings behind the judgement answers (memstrata.evidence.inference)."""

from __future__ import annotations

import pytest

from memstrata.evidence.inference import alternatives


@pytest.mark.parametrize(("question", "pair"), [
    ("Does Odile prefer the seaside or the mountains?", ("seaside", "mountains")),
    ("Would Bram rather go to a water park or a science museum?", ("water park", "science museum")),
    ("Would Odile enjoy books by J. R. R. Tolkien or Bram Okoro?", ("J. R. R. Tolkien", "Bram Okoro")),
    ("Is it tea or coffee that Bram drinks at night?", ("tea", "coffee")),
    ("Did Odile fly to Oslo or to Bergen in May?", ("Oslo", "Bergen")),
    ("Would Bram read Bram Okoro or J. R. R. Tolkien?", ("Bram Okoro", "J. R. R. Tolkien")),
])
def test_the_two_alternatives_a_question_offers(question: str, pair: tuple[str, str]):
    assert alternatives(question) == pair


@pytest.mark.parametrize("question", [
    "Was March a good month for Odile? Answer yes or no.",
    "Did Bram move to Oslo or not?",
    "Has Odile been to Oslo and/or Bergen?",
    "Would Bram enjoy a long hike?",
    "Did Odile buy tea, coffee or cake, or all three?",  # two "or": not a plain pair
])
def test_questions_that_offer_no_pair(question: str):
    assert alternatives(question) is None
