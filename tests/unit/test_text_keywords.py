"""Keywords (YAKE statistics plus names, quantities, dates) and topic tags."""

import pytest

from memstrata.text.keywords import KeywordExtractor, normalize, topic_tags, words_of

RACE = [
    "Last Saturday I ran a charity race for mental health with Jon at Camp Nou.",
    "We raised $200 for the shelter and my 3 kids cheered the whole time.",
]


@pytest.fixture(scope="module")
def kx() -> KeywordExtractor:
    return KeywordExtractor()


def test_five_to_eight_keywords_that_carry_the_content(kx: KeywordExtractor):
    kws = kx.extract(RACE, dates=["2023-05-06"], exclude=["Caroline", "Melanie"])
    assert 5 <= len(kws) <= 8
    joined = " ".join(kws).lower()
    for word in ("charity race", "jon", "camp nou", "$200", "2023-05-06"):
        assert word in joined, (word, kws)


def test_speaker_names_are_excluded_and_quantities_kept(kx: KeywordExtractor):
    kws = kx.extract(["Melanie, my 3 kids adopted a puppy named Rex in Boston."],
                     exclude=["Melanie"])
    assert "Melanie" not in kws
    assert "3 kids" in kws
    assert {"Rex", "Boston"} <= set(kws)


def test_no_keyword_is_covered_by_another(kx: KeywordExtractor):
    kws = kx.extract(["I went to an LGBTQ support group and the support group was great.",
                      "The transgender stories were inspiring and I felt accepted there."])
    keysets = [{normalize(w) for w in k.split()} for k in kws]
    for i, a in enumerate(keysets):
        for j, b in enumerate(keysets):
            assert i == j or not a < b, kws


def test_thin_text_is_padded_from_the_fallback(kx: KeywordExtractor):
    kws = kx.extract(["Pottery is relaxing."], fallback=["Hey there, lovely weather today!"])
    assert len(kws) == 5 and kws[0] in {"pottery", "relaxing"}


def test_yake_backend_gives_the_same_shape():
    pytest.importorskip("yake")
    kws = KeywordExtractor(backend="yake").extract(RACE, dates=["2023-05-06"])
    assert 5 <= len(kws) <= 8 and kws[-1] == "2023-05-06"


def test_extraction_is_deterministic(kx: KeywordExtractor):
    assert kx.extract(RACE) == kx.extract(RACE) == KeywordExtractor().extract(RACE)


def test_bad_limits_are_refused():
    with pytest.raises(ValueError):
        KeywordExtractor(max_keywords=3, min_keywords=5)


def test_tags_come_from_the_topic_lexicon():
    words = words_of("My kids love our dog, and we went hiking in the mountains after work.")
    tags = topic_tags(words, ["kids", "dog", "hiking"])
    assert 3 <= len(tags) <= 5
    assert {"family", "pets", "nature"} <= set(tags)


def test_tags_are_padded_with_keyword_heads():
    words = words_of("The quantum flux capacitor hums near my dog.")
    tags = topic_tags(words, ["flux capacitor", "quantum", "dog"])
    assert tags == ["pets", "capacitor", "quantum"]
    # With too few keywords there is nothing to pad from: fewer tags, none invented.
    assert topic_tags(words_of("The quantum flux hums."), ["quantum flux"]) == ["flux"]


def test_stems_do_not_overreach():
    assert topic_tags(["article"], []) == []
    assert "sports" in topic_tags(["workout"], [])
    assert "work" not in topic_tags(["workout"], [])


def test_quoted_titles_become_keywords_even_when_their_words_are_common():
    from memstrata.text.keywords import KeywordExtractor

    kws = KeywordExtractor().extract(
        ['I just finished "Nothing is Impossible" and loved it.',
         "It's my favourite since 'Embracing Identity' - and don't quote me on that.",
         'Before that it was "Charlotte\'s Web".'])
    assert "Nothing is Impossible" in kws
    assert "Embracing Identity" in kws
    assert "Charlotte's Web" in kws
    assert not any(k.startswith("s Web") or k.startswith("t quote") for k in kws)


def test_names_and_fragments_do_not_pad_the_tags():
    """Tags are facets: "ao" (from "Ao 26 Vegan Food Project") or "time" (from "Time Out
    Market") say nothing; the names are keywords already."""
    tags = topic_tags(words_of("Then Ao 26 Vegan Food Project is a good pick for you."),
                      ["Ao", "Vegan Food Project", "Time", "pick"])
    assert "ao" not in tags and "time" not in tags and "project" not in tags
    assert tags[0] == "food" and "pick" in tags
