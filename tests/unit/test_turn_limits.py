"""The turn event's limits and checks live once in the core (issue 17, item 1).

``validate_turn`` is what the query service's Ingest and the stream worker's
decoder both call; these tests hold its answers (reason code, and a message
naming the field, the limit and the variable) and the settings around it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from memstrata.config import ConfigError, load_settings, unknown_variables
from memstrata.limits import TurnLimits, TurnRefused, validate_turn
from memstrata.model import Scope, SessionMeta
from streams.events import Invalid, decode_turn
from streams.settings import StreamSettings, check_turns_fit

LIMITS = TurnLimits()
GOOD: dict[str, Any] = {"tenant_id": "acme", "user_id": "maya", "session_id": "s1",
                        "message_id": "m1", "role": "user", "content": "hello",
                        "ts": "2024-03-02T09:15:00Z"}


def refused(limits: TurnLimits = LIMITS, **change: Any) -> TurnRefused:
    data = {k: v for k, v in {**GOOD, **change}.items() if v is not ...}
    with pytest.raises(TurnRefused) as info:
        validate_turn(data, limits)
    return info.value


def test_one_default_for_content_and_the_models_cap_above_it() -> None:
    assert LIMITS.max_content_chars == 20_000
    with pytest.raises(ValueError):
        TurnLimits(max_content_chars=100_001)  # the model's own cap (MAX_CONTENT_CHARS)


def test_the_refusal_names_the_field_the_limit_and_the_variable() -> None:
    bad = refused(content="x" * 30_000)
    assert bad.reason == "too_large"
    assert str(bad) == ("event.content: 30000 characters, limit is 20000 "
                        "(MEMSTRATA_TURN_MAX_CONTENT_CHARS)")


@pytest.mark.parametrize(("field", "at_limit", "over", "variable"), [
    ("content", "c" * 20_000, "c" * 20_001, "MEMSTRATA_TURN_MAX_CONTENT_CHARS"),
    ("speaker", "s" * 128, "s" * 129, "MEMSTRATA_TURN_MAX_SPEAKER_CHARS"),
    ("labels", {f"k{i}": "v" for i in range(16)}, {f"k{i}": "v" for i in range(17)},
     "MEMSTRATA_TURN_MAX_LABELS"),
    ("labels", {"k" * 128: "v" * 128}, {"k" * 129: "v"}, "MEMSTRATA_TURN_MAX_LABEL_CHARS"),
    ("labels", {"k" * 128: "v" * 128}, {"k": "v" * 129}, "MEMSTRATA_TURN_MAX_LABEL_CHARS"),
])
def test_each_limit_keeps_a_value_at_it_and_refuses_one_over(field: str, at_limit: Any,
                                                              over: Any, variable: str) -> None:
    assert getattr(validate_turn({**GOOD, field: at_limit}, LIMITS), field) == at_limit
    bad = refused(**{field: over})
    assert bad.reason == "too_large" and variable in str(bad) and f"event.{field}" in str(bad)


def test_the_limits_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_TURN_MAX_CONTENT_CHARS", "10")
    limits = TurnLimits()
    assert limits.max_content_chars == 10
    assert "limit is 10 " in str(refused(limits, content="x" * 11))


@pytest.mark.parametrize(("change", "reason", "text"), [
    ({"user_id": ...}, "missing_field", "event.user_id: required"),
    ({"message_id": ""}, "missing_field", "event.message_id: required"),
    ({"session_id": "has space"}, "bad_id", "event.session_id: letters, digits"),
    ({"tenant_id": "t" * 129}, "bad_id", "event.tenant_id: 129 characters, limit is 128"),
    ({"message_id": "a\tb"}, "bad_id", "event.message_id: printable text"),
    ({"role": "system"}, "bad_role", "event.role: must be 'user' or 'assistant'"),
    ({"ts": "0001-01-01T00:00:00"}, "bad_field", "event.ts: must be from 1900-01-01"),
    ({"labels": {"": "x"}}, "bad_field", "event.labels"),
])
def test_schema_refusals_name_the_field_with_the_dlq_reason(change: dict[str, Any], reason: str,
                                                            text: str) -> None:
    bad = refused(**change)
    assert bad.reason == reason and str(bad).startswith(text), (bad.reason, str(bad))


def test_the_prefix_names_the_event_in_a_batch() -> None:
    with pytest.raises(TurnRefused, match=r"^events\[3\]\.speaker: 200 characters"):
        validate_turn({**GOOD, "speaker": "s" * 200}, LIMITS, where="events[3]")


def test_the_worker_decoder_gives_the_same_answer_as_the_core() -> None:
    stream = StreamSettings()
    for change in ({"content": "x" * 20_001}, {"speaker": "s" * 129}, {"role": "bot"},
                   {"labels": {f"k{i}": "v" for i in range(17)}}):
        core = refused(**change)
        with pytest.raises(Invalid) as info:
            decode_turn(json.dumps({"v": 1, **GOOD, **change}).encode(), stream, turns=LIMITS)
        assert (info.value.reason, info.value.detail) == (core.reason, str(core))
    ok = {"v": 1, **GOOD, "content": "x" * 20_000, "speaker": "s" * 128}
    assert decode_turn(json.dumps(ok).encode(), stream, turns=LIMITS).content == "x" * 20_000


def test_every_event_within_the_limits_fits_the_workers_byte_limit() -> None:
    # The worst case: control characters, escaped as six bytes each in JSON.
    worst = {**GOOD, "message_id": "\u00e9" * 128, "content": "\x01" * 20_000,
             "speaker": "\x01" * 128,
             "labels": {f"{i:02d}" + "\x01" * 126: "\x01" * 128 for i in range(16)}}
    event = validate_turn(worst, LIMITS)
    assert len(event.to_bytes()) <= LIMITS.largest_event_bytes() <= \
        StreamSettings().max_event_bytes
    check_turns_fit(StreamSettings(), LIMITS)
    with pytest.raises(ValueError, match="MEMSTRATA_STREAM_MAX_EVENT_BYTES .* "
                                         "MEMSTRATA_TURN_MAX_CONTENT_CHARS"):
        check_turns_fit(StreamSettings(), TurnLimits(max_content_chars=100_000))


@pytest.mark.parametrize(("old", "new"), [
    ("MEMSTRATA_SERVICE_MAX_CONTENT_CHARS", "MEMSTRATA_TURN_MAX_CONTENT_CHARS"),
    ("MEMSTRATA_STREAM_MAX_CONTENT_CHARS", "MEMSTRATA_TURN_MAX_CONTENT_CHARS"),
    ("MEMSTRATA_STREAM_MAX_SPEAKER_CHARS", "MEMSTRATA_TURN_MAX_SPEAKER_CHARS"),
    ("MEMSTRATA_STREAM_MAX_LABELS", "MEMSTRATA_TURN_MAX_LABELS"),
    ("MEMSTRATA_SERVICE_MAX_LABELS", "MEMSTRATA_TURN_MAX_LABELS"),
])
def test_an_old_limit_variable_stops_start_up_naming_the_new_one(
        monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
    monkeypatch.setenv(old, "5000")
    assert old in unknown_variables()
    with pytest.raises(ConfigError, match=f"{old}: renamed to {new}"):
        load_settings()


def test_the_new_variables_are_known(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MAX_CONTENT_CHARS", "MAX_SPEAKER_CHARS", "MAX_LABELS", "MAX_LABEL_CHARS"):
        monkeypatch.setenv(f"MEMSTRATA_TURN_{name}", "16")
    assert not [v for v in unknown_variables() if v.startswith("MEMSTRATA_TURN_")]


def test_a_later_meta_fills_only_what_is_missing() -> None:
    scope = Scope(tenant_id="acme", user_id="maya")
    first = SessionMeta(scope=scope, session_id="s", session_date=datetime(2024, 3, 2),
                        labels={"source": "chat"})
    bare = SessionMeta(scope=scope, session_id="s")
    other = SessionMeta(scope=scope, session_id="s", session_date=datetime(2025, 1, 1),
                        labels={"source": "other", "extra": "x"})
    assert first.filled_from(bare) == first
    assert first.filled_from(other) == first
    assert bare.filled_from(first) == first
    assert bare.filled_from(bare) == bare
