"""The extractive (no-LLM) builder: L0 summaries, L1 facts and L2 notes."""

from datetime import datetime

import pytest

from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.types import Window
from memstrata.model import Message, Scope, SessionMeta, Turn

META = SessionMeta(
    scope=Scope(tenant_id="t", user_id="u"),
    session_id="s1",
    session_date=datetime(2023, 5, 8, 13, 56),
)

DIALOGUE = [
    ("Caroline", "Hey Mel! Good to see you! How have you been?"),
    ("Melanie", "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up?"),
    ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "Wow, that's cool, Caroline! Did you hear any inspiring stories?"),
    ("Caroline", "The transgender stories were so inspiring! I'm keen on counseling or "
                 "working in mental health."),
    ("Melanie", "You'd be a great counselor! I painted a lake sunrise last year, "
                "painting is my outlet."),
    ("Caroline", "I love that! My grandma gave me a necklace in Sweden when I was ten."),
    ("Melanie", "That's so sweet. My husband and I are taking the kids camping next month."),
    ("Caroline", "Thanks, Mel!"),
    ("Melanie", "Bye!"),
]


def make_turns() -> list[Turn]:
    turns = []
    for i in range(0, len(DIALOGUE), 2):
        msgs = [Message(role="user" if who == "Caroline" else "assistant", content=text,
                        speaker=who, source_id=f"D1:{i + k + 1}")
                for k, (who, text) in enumerate(DIALOGUE[i : i + 2])]
        turns.append(Turn(index=i // 2 + 1, messages=msgs))
    return turns


@pytest.fixture(scope="module")
def builder() -> ExtractiveBuilder:
    return ExtractiveBuilder()


@pytest.fixture(scope="module")
def turns() -> list[Turn]:
    return make_turns()


def summaries(builder: ExtractiveBuilder, turns: list[Turn], targets: list[int]):
    return builder.summarize_window(Window(meta=META, turns=turns[:4], targets=targets))


def test_one_summary_per_target_in_order(builder, turns):
    out = summaries(builder, turns, [2, 3, 4])
    assert [s.turn_index for s in out] == [2, 3, 4]


def test_summary_is_short_named_and_dated(builder, turns):
    (s,) = summaries(builder, turns, [2])
    assert len(s.summary.split()) <= 30
    assert s.summary.startswith("Caroline went to a LGBTQ support group yesterday (2023-05-07)")
    assert " I " not in f" {s.summary} "
    assert 5 <= len(s.keywords) <= 8 and 3 <= len(s.tags) <= 5
    assert "2023-05-07" in s.keywords and "support group" in " ".join(s.keywords)
    assert "community" in s.tags
    assert not {"Caroline", "Melanie", "Mel"} & set(s.keywords)


def test_greetings_are_skipped(builder, turns):
    (s,) = summaries(builder, turns, [1])
    assert s.summary == "Melanie is swamped with the kids & work."
    assert "Good to see you" not in s.summary


def test_second_person_and_year_granularity(builder, turns):
    (s,) = summaries(builder, turns, [3])
    assert "Caroline is keen on counseling" in s.summary or "transgender" in s.summary
    notes = builder.turn_notes(META, turns)
    assert "Melanie painted a lake sunrise last year (2022)" in " ".join(notes[2].bullets)
    assert "Melanie: Caroline would be a great counselor!" in notes[2].bullets


def test_word_limit_is_configurable(turns):
    (s,) = summaries(ExtractiveBuilder(max_words=8), turns, [3])
    assert len(s.summary.split()) <= 8


def test_key_facts_carry_their_turns(builder, turns):
    facts = builder.key_facts(META, turns)
    assert 5 <= len(facts) <= 25
    by_text = {f.text: f.turn_indices for f in facts}
    group = [t for t, idx in by_text.items() if "support group" in t]
    assert group and by_text[group[0]] == [2]
    camping = [t for t, idx in by_text.items() if "camping" in t]
    assert camping and by_text[camping[0]] == [4] and "2023-06" in camping[0]
    assert all(" I " not in f" {f.text} " for f in facts)
    assert [f.turn_indices[0] for f in facts] == sorted(f.turn_indices[0] for f in facts)


def test_key_facts_read_at_most_the_input_cap(turns):
    facts = ExtractiveBuilder(max_input_chars=120).key_facts(META, turns)
    assert facts and max(i for f in facts for i in f.turn_indices) <= 2


def test_turn_notes_cover_every_turn_in_order(builder, turns):
    notes = builder.turn_notes(META, list(reversed(turns)))
    assert [n.turn_index for n in notes] == [1, 2, 3, 4, 5]
    assert notes[0].bullets == ["Melanie is swamped with the kids & work."]
    assert notes[1].bullets[0].startswith("Caroline went to a LGBTQ support group")
    # A turn of pure small talk keeps one short line.
    assert notes[4].bullets == ["Caroline: Thanks, Mel!"]


def test_output_is_deterministic(turns):
    a, b = ExtractiveBuilder(), ExtractiveBuilder()
    window = Window(meta=META, turns=turns, targets=[1, 2, 3, 4, 5])
    assert a.summarize_window(window) == b.summarize_window(window)
    assert a.key_facts(META, turns) == b.key_facts(META, turns)
    assert a.turn_notes(META, turns) == b.turn_notes(META, turns)


def test_user_and_assistant_roles_without_names():
    reply = ("Congrats! Slow introductions work best: keep the beagle and the cat in separate "
             "rooms for a week, swap their bedding so each learns the other's scent, then feed "
             "them on opposite sides of a closed door before short supervised meetings.")
    turn = Turn(index=1, messages=[
        Message(role="user", content="I adopted a beagle two weeks ago and my cat hates him."),
        Message(role="assistant", content=reply),
    ])
    (s,) = ExtractiveBuilder().summarize_window(Window(meta=META, turns=[turn], targets=[1]))
    # The long reply does not crowd out what the user said.
    assert s.summary.startswith("User adopted a beagle two weeks ago (the week of 2023-04-24)")
    assert "User's cat" in s.summary
    assert "pets" in s.tags


def test_version_and_settings():
    assert ExtractiveBuilder().version == "extractive-4"
    assert ExtractiveBuilder(max_words=20).version != "extractive-4"
    with pytest.raises(ValueError):
        ExtractiveBuilder(max_words=2)


def test_assistant_chat_keeps_the_users_passing_fact_over_a_long_reply():
    """With an unnamed assistant, what the user said leads the summary and the keywords."""
    from memstrata.llm.types import Window
    from memstrata.model import Message, Scope, SessionMeta, Turn

    meta = SessionMeta(scope=Scope(tenant_id="t", user_id="u"), session_id="s")
    reply = ("Python is a good first language. Start with variables, loops and functions. "
             "Then practise with small exercises every day on a learning app. "
             "Later, move on to files, dictionaries and simple automation scripts.")
    turn = Turn(index=1, messages=[
        Message(role="user", content="That's what I was thinking. I'm on the train about fifty "
                                     "minutes each way to the office. Which language first?"),
        Message(role="assistant", content=reply),
    ])
    out = ExtractiveBuilder().summarize_window(Window(meta=meta, turns=[turn], targets=[1]))[0]
    assert "train" in out.summary and "office" in out.summary
    assert "Assistant" not in out.summary.split("train")[0]  # the user's fact leads


def test_key_facts_are_the_users_not_the_assistants_advice():
    """L1 holds facts about the user; an unnamed assistant's suggestion is not one."""
    turns = [
        Turn(index=1, messages=[
            Message(role="user", content="I'm planning a trip to Lisbon with my sister Ines."),
            Message(role="assistant", content="Try Cervejaria Ramiro for shellfish and the "
                                              "Time Out Market for a bit of everything."),
        ]),
        Turn(index=2, messages=[
            Message(role="user", content="I adopted a cat named Sardinha after the trip."),
            Message(role="assistant", content="Sardinha is a perfect name for a cat."),
        ]),
    ]
    facts = [f.text for f in ExtractiveBuilder().key_facts(META, turns)]
    assert any("Lisbon" in f for f in facts) and any("Sardinha" in f for f in facts)
    assert not any("Ramiro" in f or "perfect name" in f for f in facts), facts


def test_user_keywords_name_the_event_even_when_the_summary_holds_it():
    turn = Turn(index=1, messages=[
        Message(role="user", content="I signed up for the Berlin half marathon on 2 June. "
                                     "I've been running three times a week."),
        Message(role="assistant", content="Nice! Eight weeks is enough to build up if you add "
                                          "one long run each weekend."),
    ])
    (s,) = ExtractiveBuilder().summarize_window(Window(meta=META, turns=[turn], targets=[1]))
    joined = " ".join(s.keywords).lower()
    assert "berlin" in joined and "half marathon" in joined, s.keywords
