"""Routing: ADD, UPDATE with dated history, IGNORE; the result does not depend on arrival order."""

from __future__ import annotations

import random

from memstrata.profiles.model import Fact, Link, Source
from memstrata.profiles.resolve import cluster
from memstrata.profiles.route import build_view, route_slot


def fact(slot: str, value: str, date: str, session: str, turn: int = 1,
         key: str = "user") -> Fact:
    return Fact(key, slot, value, Source(session, turn), "user", date, date)


def test_a_new_value_updates_and_keeps_the_old_one_with_both_dates():
    routed = route_slot("lives_in", [fact("lives_in", "Lisbon", "2023-01-15", "s1"),
                                     fact("lives_in", "Lisbon", "2023-06-01", "s2"),
                                     fact("lives_in", "Porto", "2024-03", "s3")])
    assert routed.ops == {"ADD": 1, "IGNORE": 1, "UPDATE": 1}
    (bullet,) = routed.bullets
    assert (bullet["value"], bullet["since"], bullet["op"]) == ("Porto", "2024-03", "UPDATE")
    (old,) = bullet["history"]
    assert (old["value"], old["since"], old["until"]) == ("Lisbon", "2023-01-15", "2024-03")
    assert [s["s"] for s in old["sources"]] == ["s1", "s2"]


def test_a_repeated_value_is_ignored_but_its_source_is_kept():
    routed = route_slot("diet", [fact("diet", "vegetarian", "2024-01", "s1"),
                                 fact("diet", "Vegetarian", "2024-03-02", "s2")])
    assert routed.ops == {"ADD": 1, "IGNORE": 1}
    (bullet,) = routed.bullets
    assert "history" not in bullet and len(bullet["sources"]) == 2


def test_a_changed_preference_and_a_move_back():
    routed = route_slot("pref:coffee", [fact("pref:coffee", "likes coffee", "2024-01-10", "s1"),
                                        fact("pref:coffee", "dislikes coffee", "2024-03-01",
                                             "s2")])
    assert routed.bullets[0]["value"] == "dislikes coffee"
    assert routed.bullets[0]["history"][0]["value"] == "likes coffee"
    back = route_slot("lives_in", [fact("lives_in", "Lisbon", "2020", "a"),
                                   fact("lives_in", "Porto", "2022", "b"),
                                   fact("lives_in", "Lisbon", "2024", "c")])
    assert [h["value"] for h in back.bullets[0]["history"]] == ["Lisbon", "Porto"]
    assert back.ops == {"ADD": 1, "UPDATE": 2}


def test_multi_valued_slots_keep_one_entry_per_value():
    routed = route_slot("owns", [fact("owns", "a dog", "2024-01", "s1"),
                                 fact("owns", "a cat", "2024-02", "s2"),
                                 fact("owns", "A dog", "2024-03", "s3")])
    assert [b["value"] for b in routed.bullets] == ["A dog", "a cat"]
    assert routed.ops == {"ADD": 2, "IGNORE": 1}


def test_the_view_is_the_same_whatever_order_the_facts_came_in():
    facts = [fact("lives_in", city, f"202{i}", f"s{i}") for i, city in
             enumerate(["Lisbon", "Porto", "Porto", "Braga"])]
    facts += [fact("event", f"ran a race {i}", f"2023-0{i + 1}", f"s{i}") for i in range(4)]
    first = build_view("user", ["user"], [], facts)
    for seed in range(5):
        shuffled = facts[:]
        random.Random(seed).shuffle(shuffled)
        assert build_view("user", ["user"], [], shuffled) == first


def test_aliases_join_one_name_and_two_sisters_never_merge():
    src = Source("s1", 1)
    one = cluster({"rel:user:sister", "name:ines"}, [Link("rel:user:sister", "name:ines", src)])
    assert one == {"rel:user:sister": "name:ines", "name:ines": "name:ines"}
    two = cluster({"rel:user:sister", "name:ines", "name:ana"},
                  [Link("rel:user:sister", "name:ines", src),
                   Link("rel:user:sister", "name:ana", Source("s2", 1))])
    assert two == {"rel:user:sister": "rel:user:sister", "name:ines": "name:ines",
                   "name:ana": "name:ana"}
    tagged = cluster({"user", "name:caroline", "rel:user:dad"},
                     [Link("user", "name:caroline", src)])
    assert tagged == {"user": "user", "name:caroline": "user", "rel:user:dad": "rel:user:dad"}
    spoken_to = cluster({"user", "name:john", "rel:user:kids"},
                        [Link("user", "name:john", src), Link("rel:user:kids", "name:john", src)])
    assert spoken_to["rel:user:kids"] == "rel:user:kids"  # "your kids, John": not John
