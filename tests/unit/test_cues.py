"""Rule-based cue detection, decomposition and answer types (the offline planner)."""

from __future__ import annotations

from datetime import date

import pytest

from memstrata.evidence.cues import answer_type, decompose, detect_cues, keyword_query
from memstrata.evidence.lexical import names, stem, terms


@pytest.mark.parametrize(("question", "kind"), [
    ("When did Caroline go to the LGBTQ support group?", "date"),
    ("What year did Melanie paint a sunrise?", "date"),
    ("How long has Caroline had her current group of friends for?", "duration"),
    ("How many times has Melanie gone to the beach in 2023?", "count"),
    ("Who supports Caroline when she has a negative experience?", "person"),
    ("Where did Caroline move from 4 years ago?", "place"),
    ("Which city is John excited to have a game at?", "place"),
    ("Why did Gina decide to start her own clothing store?", "reason"),
    ("Would Caroline likely have Dr. Seuss books on her bookshelf?", "yesno"),
    ("What activities does Melanie partake in?", "list"),
    ("What European countries has Maria been to?", "list"),
    ("What hurts after my long runs?", "thing"),  # a verb in -s, not a plural
    ("What did Caroline research?", "thing"),
    ("What is Caroline's identity?", "thing"),
])
def test_answer_types(question: str, kind: str):
    assert answer_type(question) == kind


def test_temporal_cues_and_relative_dates():
    c = detect_cues("What did I buy last weekend?", date(2024, 5, 8))
    assert c.temporal and c.relative_dates == ("last weekend",)
    assert not c.counting
    c = detect_cues("When did Melanie run a charity race?")
    assert c.temporal and c.answer_type == "date" and c.relative_dates == ()


def test_counting_multi_hop_and_exact_detail_cues():
    c = detect_cues("How many children does Melanie have?")
    assert c.counting and not c.multi_hop
    c = detect_cues("What activities has Melanie done with her family?")
    assert c.counting and c.multi_hop and c.answer_type == "list"
    c = detect_cues("What was the name of the bakery you recommended?")
    assert c.exact_detail
    c = detect_cues('Which song motivates Caroline to be courageous?')
    assert c.exact_detail and "exact_detail" in c.labels
    assert not detect_cues("Would Melanie enjoy hiking?").exact_detail


def test_subjects_are_the_participants_the_question_names():
    c = detect_cues("What did Caroline realize after her charity race?", None,
                    ("Caroline", "Melanie"))
    assert c.subjects == ("Caroline",) and c.participants == ("Caroline", "Melanie")
    assert detect_cues("What did I buy?", None, ("User", "Assistant")).subjects == ()


@pytest.mark.parametrize(("question", "parts"), [
    ("Where did I get promoted and when did I get back from Lisbon?",
     ["Where did I get promoted?", "when did I get back from Lisbon?"]),
    ("What do Melanie and Caroline both like?",
     ["What do Melanie like?", "What do Caroline like?"]),
    ("What did Ana do after the move to Berlin?",
     ["What did Ana do?", "the move to Berlin"]),
    ("What did Caroline research?", ["What did Caroline research?"]),
])
def test_decompose(question: str, parts: list[str]):
    assert decompose(question) == parts
    assert detect_cues(question).compound == (len(parts) > 1)


def test_lexical_helpers():
    assert keyword_query("When did Caroline go to the LGBTQ support group?") == \
        "Caroline go LGBTQ support group"
    assert stem("paintings") == stem("painted") == "paint"
    assert stem("named") == stem("name") and stem("went") == "go"
    assert terms("What did Caroline research?") == ("carolin", "research")
    assert names("Hey Melanie! I met Dr. Seuss fans at Cervejaria Ramiro's bar.") == (
        "Melanie", "Dr", "Seuss", "Cervejaria Ramiro")
