"""The LLM profile extractor's reply checking and its fall back to the rules (no server).

``ScriptedJsonChat`` is a TEST DOUBLE of the chat client's JSON call; the
extractor, the schema, the conversion to occurrences and the rules are real.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pytest
from pydantic import ValidationError

from memstrata.llm.types import LLMError
from memstrata.llm.usage import Role, UsageMeter
from memstrata.model import Message, Scope, SessionMeta, Turn
from memstrata.profiles.extract import extract_session
from memstrata.profiles.llm_extract import (
    LLMProfileExtractor,
    ProfileReply,
    RuleExtractor,
    occurrences,
    profile_extractor,
)
from memstrata.profiles.llm_prompt import MAX_FACTS
from memstrata.profiles.model import Link, Source

META = SessionMeta(scope=Scope(tenant_id="t", user_id="u"), session_id="s1",
                   session_date=datetime(2024, 3, 2, 9, 0))
TURNS = [
    Turn(index=1, messages=[
        Message(role="user", speaker="Maya", source_id="m1",
                content="Ines, my sister, has been in Porto for a while now."),
        Message(role="assistant", content="Try Cervejaria Ramiro when you visit Lisbon.",
                source_id="a1")]),
    Turn(index=2, messages=[Message(role="user", content="She only eats fish.",
                                    source_id="m2")]),
]
GOOD: dict[str, Any] = {
    "entities": [
        {"id": "e1", "name": "Inês", "relation": "sister", "of": "user", "kind": "person",
         "gender": "female", "turns": [1, 2]},
        {"id": "e2", "name": "Cervejaria Ramiro", "relation": "null", "of": None,
         "kind": "place", "turns": [1]},
        {"id": "e3", "name": "Ghost", "kind": "person", "turns": [9]},  # no such turn
    ],
    "facts": [
        {"about": "e1", "attribute": "lives_in", "value": "Porto", "date": None, "turn": 1,
         "said_by": "user"},
        {"about": "e1", "attribute": "eats", "value": "fish", "turn": 2},
        {"about": "assistant", "attribute": "recommended", "value": "e2", "turn": 1,
         "said_by": "assistant"},
        {"about": "e9", "attribute": "age", "value": "40", "turn": 1},  # unknown subject
        {"about": "user", "attribute": "age", "value": "31", "turn": 7},  # no such turn
    ],
}


class ScriptedJsonChat:
    """TEST DOUBLE of ChatClient.complete_json: returns or raises what it was given."""

    def __init__(self, *replies: dict[str, Any] | Exception) -> None:
        self.replies = list(replies)
        self.meter = UsageMeter()
        self.calls: list[Sequence[Mapping[str, Any]]] = []

    def model_for(self, role: Role) -> str:
        return "scripted"

    def complete_json(self, role: Role, messages: Sequence[Mapping[str, Any]],
                      schema_hint: str | None = None) -> dict[str, Any]:
        self.calls.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_a_valid_reply_becomes_occurrences_tied_to_turns() -> None:
    out = occurrences(META, TURNS, ProfileReply.model_validate(GOOD))
    facts = {(f.key, f.slot, f.value, f.source, f.by) for f in out.facts}
    assert facts == {
        ("name:ines", "lives_in", "Porto", Source("s1", 1, ("m1",)), "user"),
        ("name:ines", "eats:fish", "eats fish", Source("s1", 2, ("m2",)), "user"),
        ("assistant", "recommended", "@name:cervejaria ramiro", Source("s1", 1, ("a1",)),
         "assistant"),
        ("name:cervejaria ramiro", "recommended_by", "@assistant", Source("s1", 1, ("a1",)),
         "assistant"),
    }
    assert {f.date for f in out.facts} == {"2024-03-02"}  # no date given: the session's
    assert Link("rel:user:sister", "name:ines", Source("s1", 1, ("m1", "a1"))) in out.links
    assert Link("user", "name:maya", Source("s1", 1, ("m1",))) in out.links  # the speaker
    assert {(m.key, m.form, m.source.turn) for m in out.mentions if m.key != "name:maya"} == {
        ("name:ines", "Inês", 1), ("name:ines", "Inês", 2), ("rel:user:sister", "my sister", 1),
        ("rel:user:sister", "my sister", 2), ("name:cervejaria ramiro", "Cervejaria Ramiro", 1)}
    assert "name:ghost" not in out.keys()


@pytest.mark.parametrize("bad", [
    {"facts": [{"about": "user", "attribute": "shoe_size", "value": "40", "turn": 1}]},
    {"facts": [{"about": "user", "attribute": "age", "value": "", "turn": 1}]},
    {"facts": [{"about": "user", "attribute": "age", "value": "3", "turn": 1,
                "date": "last May"}]},
    {"entities": [{"id": "e1", "name": "X", "kind": "planet", "turns": [1]}]},
    {"entities": [{"id": "e1", "name": "X", "kind": "person", "turns": []}]},
    {"entities": "none"},
])
def test_a_reply_off_the_schema_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ProfileReply.model_validate(bad)


def test_more_facts_than_the_cap_are_cut_off() -> None:
    many = {"facts": [{"about": "user", "attribute": "owns", "value": f"thing {i}", "turn": 1}
                      for i in range(MAX_FACTS + 30)]}
    assert len(ProfileReply.model_validate(many).facts) == MAX_FACTS


@pytest.mark.parametrize(("reply", "reason"), [
    ({"entities": [{"id": 1}]}, "unparsable"),
    (LLMError("slow", reason="timeout", role="builder"), "timeout"),
    (RuntimeError("a bug"), "error"),
])
def test_a_failed_read_falls_back_to_the_rules_marked_and_counted(
        reply: dict[str, Any] | Exception, reason: str) -> None:
    chat = ScriptedJsonChat(reply)
    got = LLMProfileExtractor(chat).extract(META, TURNS)
    assert (got.via, got.fallback) == ("rules", reason)
    assert got.extract == extract_session(META, TURNS)
    assert chat.meter.fallbacks() == {("builder", reason): 1}


def test_the_prompt_names_the_speakers_the_date_and_every_turn() -> None:
    chat = ScriptedJsonChat(GOOD)
    got = LLMProfileExtractor(chat).extract(META, TURNS)
    assert got.via == "llm" and got.fallback is None and not chat.meter.fallbacks()
    user = chat.calls[0][-1]["content"]
    assert "2024-03-02" in user and "user is Maya" in user
    assert "[Turn 1]" in user and "[Turn 2]" in user and "only eats fish" in user


def test_only_an_llm_builder_gets_the_llm_extractor() -> None:
    from memstrata.llm.extractive import ExtractiveBuilder

    assert isinstance(profile_extractor(ExtractiveBuilder()), RuleExtractor)
