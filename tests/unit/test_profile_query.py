"""Target and attribute resolution over profile views (memstrata.profiles.query), no store.

The views are built by the routing rules from facts written here, so the tests
read the same shape ``ProfileBook.views`` returns.
"""

from __future__ import annotations

from typing import Any

from memstrata.profiles.model import Fact, Mention, Source
from memstrata.profiles.query import read, spoken_date, wants_profile
from memstrata.profiles.route import build_view


def _src(sid: str, turn: int) -> Source:
    return Source(sid, turn, (f"{sid}#{turn}",))


def _views() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A user who moved, a brother with a job, a parrot fed by a cousin, a café."""
    s1, s2, s3 = _src("s1", 1), _src("s2", 2), _src("s3", 1)
    user = build_view("user", ["user"], [], [
        Fact("user", "lives_in", "Ghent", s1, "user", "2021-04", "2021-04-10"),
        Fact("user", "lives_in", "Leuven", s3, "user", "2023-09", "2023-10-01"),
        Fact("user", "pref:tea", "likes tea", s1, "user", None, "2021-04-10"),
    ])
    bro = build_view("name:jonas", ["name:jonas", "rel:user:brother"], [
        Mention("name:jonas", "Jonas", s2, "person", "m"),
        Mention("rel:user:brother", "my brother", s2, "person", "m"),
    ], [Fact("name:jonas", "works_as", "baker at Le Pain", s2, "user", None, "2022-01-01")])
    cousin = build_view("name:lea", ["name:lea", "rel:user:cousin"], [
        Mention("name:lea", "Léa", s2, "person", "f"),
        Mention("rel:user:cousin", "my cousin", s2, "person", "f"),
    ], [Fact("name:lea", "looks_after", "@name:kiwi", s2, "user", None, "2022-01-01"),
        Fact("name:lea", "eats:shellfish", "eats shellfish", s2, "user", None, "2022-01-01")])
    kiwi = build_view("name:kiwi", ["name:kiwi", "rel:user:parrot"], [
        Mention("name:kiwi", "Kiwi", s2, "pet", None, "parrot"),
        Mention("rel:user:parrot", "my parrot", s2, "pet", None, "parrot"),
    ], [Fact("name:kiwi", "cared_for_by", "@name:lea", s2, "user", None, "2022-01-01")])
    cafe = build_view("name:cafe mokka", ["name:cafe mokka"], [
        Mention("name:cafe mokka", "Cafe Mokka", s1, "place"),
    ], [Fact("name:cafe mokka", "recommended_by", "@assistant", s1, "assistant", None,
             "2021-04-10")])
    views = [user, bro, cousin, kiwi, cafe]
    names = {"user": "the user", "assistant": "the assistant", "name:lea": "Léa",
             "name:kiwi": "Kiwi", "name:jonas": "Jonas", "name:cafe mokka": "Cafe Mokka"}
    return views, names


def test_a_relation_and_a_name_resolve_to_the_same_person() -> None:
    views, names = _views()
    for q in ("What is my brother's job?", "What does Jonas do for a living?"):
        found = read(q, views, names)
        assert found.target is not None and found.target.entity_id == "name:jonas"
        assert found.answer == "baker"  # the title, not the bakery
        assert found.hits[0].sources[0].label() == "s2#2 (s2#2)"


def test_an_open_who_finds_the_holder_of_the_fact() -> None:
    views, names = _views()
    assert read("Who looks after my parrot?", views, names).answer == "Léa"
    assert read("Who eats shellfish?", views, names).answer == "Léa"
    assert read("Who recommended Cafe Mokka?", views, names).answer == "the assistant"
    assert read("Who eats tofu?", views, names).answer is None  # nobody: no guess


def test_the_user_now_before_and_since_when() -> None:
    views, names = _views()
    assert read("Where do I live now?", views, names).answer == "Leuven"
    before = read("Where did I live before?", views, names)
    assert before.answer == "Ghent" and before.hits[0].sources[0].session_id == "s1"
    assert read("When did I move to Leuven?", views, names).answer == "September 2023"


def test_an_unstated_attribute_of_a_known_person_is_not_stated() -> None:
    views, names = _views()
    found = read("How old is my brother?", views, names)
    assert found.abstain and not found.answer
    assert found.supports("My brother Jonas turned 40 last week.")
    assert not found.supports("I turned 40 last week.")  # about someone else
    assert not found.supports("My brother Jonas loves bread.")  # not an age


def test_an_unknown_relation_or_extra_words_are_not_answered_from_profiles() -> None:
    views, names = _views()
    assert read("What is my sister's job?", views, names).target is None
    assert read("What kind of tea cake does my brother bake?", views, names).answer is None
    assert read("What is Jonas's brothers' job?", views, names).target is None
    assert not wants_profile("How much did the trip cost?")


def test_spoken_dates() -> None:
    assert spoken_date("2024-03-02") == "2 March 2024"
    assert spoken_date("2024-01") == "January 2024"
    assert spoken_date("2024") == "2024" and spoken_date(None) == ""


def test_a_relation_asked_in_other_words_finds_the_same_person() -> None:
    views, names = _views()
    src = _src("s4", 1)
    views.append(build_view("name:renata", ["name:renata", "rel:user:boss"], [
        Mention("name:renata", "Renata", src, "person", "f"),
        Mention("rel:user:boss", "my boss", src, "person", "f"),
    ], []))
    for q in ("Who is my manager at work?", "Who is my boss?", "What is my supervisor's name?"):
        found = read(q, views, names)
        assert found.answer == "Renata", q
        assert found.hits[0].sources[0].session_id == "s4"
    assert read("Who is my mentor?", views, names).answer is None  # no such tie known


def test_a_hobbies_question_answers_with_the_pastimes_only() -> None:
    s1 = _src("s1", 1)
    user = build_view("user", ["user"], [], [
        Fact("user", "activity", "camping", s1, "user", None, "2023-05-01"),
        Fact("user", "activity", "running farther to de-stress", s1, "user", None, "2023-05-01"),
        Fact("user", "pref:pottery", "likes pottery", s1, "user", None, "2023-05-01"),
        Fact("user", "pref:tea", "likes tea", s1, "user", None, "2023-05-01"),
    ])
    names = {"user": "the user", "assistant": "the assistant"}
    found = read("What activities do I partake in?", [user], names)
    assert found.attribute == "activities"
    assert set((found.answer or "").split(", ")) == {"camping", "running", "pottery"}
    # A restriction the bullets do not hold leaves the evidence path to answer.
    assert not read("What activities have I done with my colleagues?", [user], names).decisive


def test_a_list_question_on_a_verb_answers_with_its_objects() -> None:
    s1 = _src("s1", 1)
    user = build_view("user", ["user", "name:mel"], [Mention("name:mel", "Mel", s1, "user")], [
        Fact("user", "event", "painted that lake sunrise last year", s1, "user", "2022",
             "2023-05-01"),
        Fact("user", "event", "finished painting a horse", s1, "user", "2023-05", "2023-05-01"),
        Fact("user", "event", "painted it yesterday", s1, "user", "2023-05", "2023-05-01"),
        Fact("user", "event", "visited Rome", s1, "user", "2023-05", "2023-05-01"),
    ])
    names = {"user": "Mel", "assistant": "the assistant"}
    assert wants_profile("What has Mel painted?")
    found = read("What has Mel painted?", [user], names)
    assert found.answer == "lake sunrise, horse"  # "it" names nothing
    assert read("Which cities has Mel visited?", [user], names).answer == "Rome"
    # One thing asked ("What did ..."), or nothing done: the evidence path answers.
    assert not read("What did Mel paint?", [user], names).decisive
    assert not read("What has Mel cooked?", [user], names).decisive


def test_a_time_phrase_in_the_question_does_not_restrict_the_value() -> None:
    s1 = _src("s1", 1)
    user = build_view("user", ["user"], [], [
        Fact("user", "from", "Sweden", s1, "user", None, "2023-06-27")])
    names = {"user": "the user", "assistant": "the assistant"}
    assert read("Where did I move from 4 years ago?", [user], names).answer == "Sweden"
