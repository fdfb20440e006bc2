"""The profile rules read who a clause is about and what it says of them (no LLM)."""

from __future__ import annotations

from datetime import datetime

from memstrata.model import Message, Scope, SessionMeta, Turn
from memstrata.profiles.extract import extract_session
from memstrata.profiles.model import Fact, SessionExtract

SCOPE = Scope(tenant_id="t", user_id="u")


def session(*exchanges: tuple[str, str] | str, date: str = "2024-03-02") -> SessionExtract:
    """One session: each item is a user message, or a (user, assistant) pair."""
    turns = []
    for i, ex in enumerate(exchanges, start=1):
        user, reply = (ex, None) if isinstance(ex, str) else ex
        msgs = [Message(role="user", content=user, source_id=f"m{i}u")]
        if reply:
            msgs.append(Message(role="assistant", content=reply, source_id=f"m{i}a"))
        turns.append(Turn(index=i, messages=msgs))
    meta = SessionMeta(scope=SCOPE, session_id="s1", session_date=datetime.fromisoformat(date))
    return extract_session(meta, turns)


def facts(e: SessionExtract, key: str | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in e.facts:
        if key is None or f.key == key:
            out.setdefault(f.slot, []).append(f.value)
    return out


def only(e: SessionExtract, key: str, slot: str) -> Fact:
    found = [f for f in e.facts if f.key == key and f.slot == slot]
    assert len(found) == 1, found
    return found[0]


def test_a_relation_phrase_links_the_relation_to_the_name():
    e = session("I'm planning a trip with my sister Inês.", "Our neighbour Tomasz is kind.",
                "Ana, my best friend, is a nurse.", "My dog, Biscuit, is a beagle.")
    links = {(x.alias, x.name) for x in e.links}
    assert links == {("rel:user:sister", "name:ines"), ("rel:user:neighbour", "name:tomasz"),
                     ("rel:user:best friend", "name:ana"), ("rel:user:dog", "name:biscuit")}
    assert facts(e, "name:ana") == {"works_as": ["nurse"]}
    assert facts(e, "name:biscuit") == {"is_a": ["beagle"]}
    kinds = {m.key: m.kind for m in e.mentions if m.kind}
    assert kinds["name:ines"] == "person" and kinds["name:biscuit"] == "pet"


def test_the_users_statements_go_to_the_persona_and_others_to_theirs():
    e = session("Also, I'm vegetarian since January, but Inês eats fish.",
                "I live in Porto and I love running.")
    assert facts(e, "user") == {"diet": ["vegetarian"], "lives_in": ["Porto"],
                                "pref:running": ["likes running"]}
    assert facts(e, "name:ines") == {"eats:fish": ["eats fish"]}
    assert only(e, "user", "diet").date == "2024-01"  # "since January", said in March


def test_she_resolves_to_the_one_woman_of_the_window_and_not_when_two_are():
    one = session(("Back home.", "Did Inês like Cervejaria Ramiro?"), "She loved the garlic prawns.")
    assert facts(one, "name:ines") == {"pref:garlic prawns": ["likes garlic prawns"]}
    two = session("My sister Inês and my mother Ana came.", "She loved the garlic prawns.")
    assert not [f for f in two.facts if f.slot.startswith("pref:")]
    far = session("My sister Inês called.", "Work was busy.", "Lunch was late.",
                  "She loved the prawns.")
    assert not [f for f in far.facts if f.slot.startswith("pref:")]  # out of the window


def test_what_the_assistant_recommends_is_the_assistants():
    e = session(("We want seafood.", "Try Cervejaria Ramiro for shellfish and the Time Out "
                                     "Market for a bit of everything."))
    assert sorted(facts(e, "assistant")["recommended"]) == ["@name:cervejaria ramiro",
                                                            "@name:time out market"]
    assert facts(e, "name:cervejaria ramiro") == {"recommended_by": ["@assistant"]}
    assert "recommended" not in facts(e, "user")
    assert {f.by for f in e.facts} == {"assistant"}


def test_a_third_party_recommendation_is_theirs():
    e = session("My friend Ana recommended Cervejaria Ramiro.")
    assert facts(e, "name:cervejaria ramiro") == {"recommended_by": ["@name:ana"]}
    assert facts(e, "name:ana") == {"recommended": ["@name:cervejaria ramiro"]}


def test_moves_jobs_pets_and_care():
    e = session("I moved to Porto last month.", "I adopted a cat named Sardinha.",
                "Our neighbour Tomasz will look after Biscuit while we are away.",
                "I start a new job at a robotics startup in Munich next Monday.",
                date="2024-01-05")
    assert only(e, "user", "lives_in").value == "Porto"
    assert only(e, "user", "lives_in").date == "2023-12"
    assert "moved to Porto last month" in facts(e, "user")["event"][0]
    assert facts(e, "user")["owns"] == ["a cat named Sardinha"]
    assert ("rel:user:cat", "name:sardinha") in {(x.alias, x.name) for x in e.links}
    assert facts(e, "name:tomasz")["looks_after"] == ["@name:biscuit"]
    assert facts(e, "name:tomasz")["plan"] == ["will look after Biscuit while we are away"]
    assert facts(e, "name:biscuit") == {"cared_for_by": ["@name:tomasz"]}
    job = only(e, "user", "works_at")
    assert job.value == "robotics startup in Munich" and job.date == "2024-01-08"


def test_possessives_favourites_and_dislikes():
    e = session("Inês's job is nurse.", "My favourite city is Lisbon.",
                "I don't like coffee anymore.", "Tomasz is 34 years old.")
    assert facts(e, "name:ines") == {"works_as": ["nurse"]}
    assert facts(e, "user") == {"favourite:city": ["Lisbon"], "pref:coffee": ["dislikes coffee"]}
    assert facts(e, "name:tomasz") == {"age": ["34"]}


def test_questions_and_small_talk_hold_no_facts():
    e = session(("Great. Should I worry?", "Did Inês like Cervejaria Ramiro?"),
                "Lisbon in May is lovely.", "Thanks, I love it!")
    assert e.facts == []


def test_every_fact_names_its_turn_and_message():
    e = session(("Hi.", "Hello."), "Inês eats fish.")
    f = only(e, "name:ines", "eats:fish")
    assert (f.source.session_id, f.source.turn, f.source.message_ids) == ("s1", 2, ("m2u",))
    assert f.by == "user" and f.said == "2024-03-02"


def test_speaker_names_join_the_participants():
    meta = SessionMeta(scope=SCOPE, session_id="s1", session_date=datetime(2023, 5, 8))
    turns = [Turn(index=1, messages=[
        Message(role="user", content="I went to a support group yesterday.", speaker="Caroline"),
        Message(role="assistant", content="Caroline, that is great!", speaker="Melanie")])]
    e = extract_session(meta, turns)
    assert {(x.alias, x.name) for x in e.links} == {("user", "name:caroline"),
                                                     ("assistant", "name:melanie")}
    event = only(e, "user", "event")
    assert event.value.startswith("went to a support group") and event.date == "2023-05-07"


def test_pastimes_named_in_passing_become_activities():
    e = session("I went camping with my kids last week.",
                "Yesterday I took a pottery class and it was fun.",
                "We love going swimming.", "I went missing for a while.",
                "I did not go hiking.")
    acts = facts(e, "user").get("activity", [])
    assert sorted(set(acts)) == ["camping", "pottery", "swimming"]
    assert "event" in facts(e, "user")  # the dated clause stays an event too


def test_a_named_home_country_is_where_the_speaker_is_from():
    e = session("This necklace is a gift from my grandma in my home country, Sweden.",
                "Is your hometown of Lyon nice?")
    assert facts(e, "user").get("from") == ["Sweden"]  # the question states nothing
