"""Sentence splitting, word clipping and first/second person rewriting."""

from memstrata.text.perspective import rewrite_person
from memstrata.text.sentences import clip_words, count_words, split_sentences


def test_split_on_terminal_punctuation_but_not_abbreviations():
    assert split_sentences("Hey Mel! Good to see you! How have you been?") == [
        "Hey Mel!", "Good to see you!", "How have you been?"]
    assert split_sentences("I met Dr. Smith at 5 p.m. today. It was great.") == [
        "I met Dr. Smith at 5 p.m. today.", "It was great."]
    assert split_sentences("J. K. Rowling wrote it. Really?! Yes") == [
        "J. K. Rowling wrote it.", "Really?!", "Yes"]
    assert split_sentences("line one\nline two") == ["line one", "line two"]
    assert split_sentences("   ") == []


def test_word_counting_and_clipping():
    assert count_words("one two  three\nfour") == 4
    assert clip_words("one two three, four five", 3) == "one two three…"
    assert clip_words("short text", 5) == "short text"


def test_first_person_becomes_the_speaker():
    assert rewrite_person("I'm keen on counseling and I love painting with my kids.",
                          "Caroline") == (
        "Caroline is keen on counseling and Caroline loves painting with Caroline's kids.")
    assert rewrite_person("I really enjoy it. I don't know. I have two dogs.", "Mel") == (
        "Mel really enjoys it. Mel doesn't know. Mel has two dogs.")


def test_second_person_becomes_the_listener_except_in_idioms():
    out = rewrite_person("You'd be a great counselor! Are you ok? Thank you, you know.",
                         "Melanie", "Caroline")
    assert out == "Caroline would be a great counselor! Is Caroline ok? Thank you, you know."
    # Without a known listener "you" is left as it is.
    assert rewrite_person("Did you go?", "Melanie") == "Did you go?"


def test_verbs_after_auxiliaries_are_not_conjugated():
    assert rewrite_person("Did you hear the news?", "Mel", "Jo") == "Did Jo hear the news?"
