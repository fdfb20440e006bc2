"""People named by relation ("my sister") are matched to the name the evidence gives them."""

from __future__ import annotations

from memstrata.evidence import lexical, relevance
from memstrata.evidence.cues import detect_cues
from memstrata.evidence.extract import span_for
from memstrata.evidence.lines import EvidenceLine
from memstrata.model import Layer


def line(text: str, turn: int, session: str = "s1") -> EvidenceLine:
    return EvidenceLine(session_id=session, session_date=None, layer=Layer.L3, text=text,
                        turn_indices=(turn,))


def test_names_and_words_keep_accented_letters():
    assert lexical.names("Did Inês like Cervejaria Ramiro?") == ("Inês", "Cervejaria Ramiro")
    assert "inê" in lexical.terms("Inês eats fish")  # one word, not "In" + "s"


def test_kin_reads_the_relation_and_the_name():
    assert lexical.kin("a trip with my sister Inês.") == (("sister", "Inês"),)
    assert lexical.kin("User's older brother, Tom, came") == (("brother", "Tom"),)
    assert lexical.kin("Inês, my sister, loves fish") == (("sister", "Inês"),)
    assert lexical.kin("my friend is here") == ()


def test_place_questions_with_modifiers_and_generic_nouns():
    c = detect_cues("Which seafood place did my sister like?")
    assert c.answer_type == "place"
    assert "place" not in c.terms and {"seafood", "sister", "like"} <= set(c.terms)
    assert detect_cues("Which city did Joy move to?").answer_type == "place"
    assert detect_cues("What did Caroline do at the park?").answer_type == "thing"
    assert "restaur" in detect_cues("Which restaurant did Ana like?").terms  # named, kept


def test_a_line_about_the_named_relative_answers_the_relation_question():
    cues = detect_cues("Which seafood place did my sister like?")
    lines = [line("I'm planning a trip to Lisbon with my sister Inês.", 1),
             line("We loved the food in Porto, so we want good seafood places.", 2),
             line("Did Inês like Cervejaria Ramiro?", 3, "s2"),
             line("She loved the garlic prawns.", 4, "s2")]
    ranked = relevance.rank(cues, lines)
    about_ines = next(s for s in ranked if s.line is lines[2])
    porto = next(s for s in ranked if s.line is lines[1])
    assert about_ines.coverage > porto.coverage
    resolved = relevance.with_aliases(cues, lines)
    assert "Inês" in resolved.names
    assert span_for(resolved, lines[2]) == ("Cervejaria Ramiro", "place")
    # Without the alias the sister's name would be taken for the place.
    assert span_for(cues, lines[2])[0] == "Inês"


def test_a_time_is_not_a_place():
    cues = detect_cues("Which national park did Ana visit?")
    assert span_for(cues, line("Last Friday we hiked in Voyageurs National Park.", 1)) == \
        ("Voyageurs National Park", "place")
