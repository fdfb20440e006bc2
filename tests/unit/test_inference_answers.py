"""Offline answers to questions that ask for a judgement, not a stated fact.

Two failure kinds found in LoCoMo's open-domain questions (issue 33): a
yes/no-shaped question that offers alternatives ("a beach or the mountains?")
was answered "Yes", and a hypothetical that takes its condition away ("would
she still ... if she hadn't ...?") was answered as if the condition held.
The turns are written here, with made-up people; nothing comes from a data set.
"""

from __future__ import annotations

from datetime import datetime

from memstrata.evidence.cues import detect_cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.trace import Trace
from memstrata.model import Layer
from memstrata.synth.answer import ExtractiveAnswer

PEOPLE = ("Odile", "Bram")


def said(text: str, speaker: str = "Odile", turn: int = 1, session: str = "s1") -> EvidenceLine:
    return EvidenceLine(session, datetime(2024, 6, 1, 10), Layer.L3, f"{speaker}: {text}",
                        (turn,), speaker, about=(speaker,))


def ask(question: str, *lines: EvidenceLine) -> str:
    cues = detect_cues(question, None, PEOPLE)
    return ExtractiveAnswer().generate(cues, None, list(lines), "", None, None, Trace(),
                                       0).answer


# -- alternatives --------------------------------------------------------------------------------


def test_alternatives_are_answered_with_the_one_the_evidence_names():
    lines = [said("We hiked up to the ridge again, the mountains are my happy place.", turn=1),
             said("Odile, you and your mountains!", speaker="Bram", turn=2),
             said("I could spend every weekend in the mountains, honestly.", turn=3)]
    assert ask("Does Odile prefer the seaside or the mountains?", *lines) == "mountains"


def test_the_first_alternative_when_the_evidence_names_neither():
    lines = [said("I finished the quilt for my niece last night.", turn=1)]
    answer = ask("Would Odile rather knit a scarf or a hat?", *lines)
    assert answer == "scarf"


def test_people_talking_do_not_decide_between_two_named_alternatives():
    # "Bram" is in nearly every line, since Bram talks: it must not pick "Bram Okoro".
    lines = [said("Bram, I reread the Tolkien letters this week.", turn=1),
             said("Bram here, glad you liked them.", speaker="Bram", turn=2),
             said("Bram, do you want them back?", turn=3)]
    answer = ask("Would Odile enjoy books by J. R. R. Tolkien or Bram Okoro?", *lines)
    assert answer == "J. R. R. Tolkien"


def test_yes_or_no_is_not_a_pair_of_alternatives():
    lines = [said("Work was rough in March, two projects were cancelled.", turn=1)]
    answer = ask("Was March a good month for Odile at work? Answer yes or no.", *lines)
    assert answer in ("Yes", "No")
