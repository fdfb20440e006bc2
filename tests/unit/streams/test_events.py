"""Turn and control events: what is accepted, and the reason each bad one is refused."""

from __future__ import annotations

import json

import pytest

from streams.events import (
    ControlEvent,
    Invalid,
    TurnEvent,
    decode_control,
    decode_turn,
    event_key,
)
from streams.settings import KafkaSettings, StreamSettings

LIMITS = StreamSettings(max_content_chars=50, max_event_bytes=2000, max_labels=2)

GOOD = {"v": 1, "tenant_id": "acme", "user_id": "maya", "session_id": "s1",
        "message_id": "s1#1", "role": "user", "content": "hello", "ts": "2024-03-02T09:15:00Z"}


def raw(**change: object) -> bytes:
    d = {**GOOD, **change}
    return json.dumps({k: v for k, v in d.items() if v is not ...}).encode()


def reason(value: bytes, key: bytes | None = None) -> str:
    with pytest.raises(Invalid) as info:
        decode_turn(value, LIMITS, key)
    return info.value.reason


def test_good_event_round_trips_and_keys_by_session() -> None:
    ev = decode_turn(raw(), LIMITS, b"acme/maya/s1")
    assert ev.key == b"acme/maya/s1" == event_key("acme", "maya", "s1")
    assert decode_turn(ev.to_bytes(), LIMITS) == ev
    assert ev.message().source_id == "s1#1"
    assert ev.meta().scope.user_id == "maya"


@pytest.mark.parametrize(("value", "expected"), [
    (b"{not json", "not_json"),
    (b"[1, 2]", "not_json"),
    (b"\xff\xfe", "not_json"),
    (raw(v=2), "bad_version"),
    (raw(user_id=...), "missing_field"),
    (raw(role="system"), "bad_role"),
    (raw(session_id="has space"), "bad_id"),
    (raw(message_id="a\tb"), "bad_id"),
    (raw(content="x" * 51), "too_large"),
    (b"{" + b" " * 3000 + b"}", "too_large"),
    (raw(labels={"a": "1", "b": "2", "c": "3"}), "too_large"),
    (raw(ts="yesterday-ish"), "bad_field"),
    (raw(extra="field"), "bad_field"),
])
def test_bad_events_are_refused_with_their_reason(value: bytes, expected: str) -> None:
    assert reason(value) == expected


def test_the_detail_names_the_field_and_the_limit() -> None:
    with pytest.raises(Invalid) as info:
        decode_turn(raw(content="x" * 51), LIMITS)
    assert "content" in info.value.detail and "50" in info.value.detail
    assert "MEMSTRATA_STREAM_MAX_CONTENT_CHARS" in info.value.detail


def test_a_key_that_does_not_match_the_event_is_refused() -> None:
    assert reason(raw(), key=b"acme/maya/other") == "bad_key"


def test_dead_letter_keeps_the_original_bytes() -> None:
    bad = Invalid("not_json", "cannot decode")
    dead = bad.dead_letter(topic="t", partition=3, offset=17, key=b"k", value=b"\xff")
    assert dead.original() == b"\xff" and dead.partition == 3 and dead.offset == 17


def test_control_events() -> None:
    ev = ControlEvent(type="delete_user", tenant_id="acme", user_id="maya",
                      ts="2024-01-01T00:00:00Z", after={0: 3, 2: 9})
    assert ev.key == b"acme/maya/"
    back = decode_control(ev.to_bytes(), LIMITS, ev.key)
    assert back.after == {0: 3, 2: 9}
    missing = json.dumps({"v": 1, "type": "close_session", "tenant_id": "acme",
                          "user_id": "maya", "ts": "2024-01-01T00:00:00Z"}).encode()
    with pytest.raises(Invalid) as info:
        decode_control(missing, LIMITS)
    assert info.value.reason == "missing_field" and "session_id" in info.value.detail


def test_turn_event_fields_are_the_documented_contract() -> None:
    assert set(TurnEvent.model_fields) == {
        "v", "tenant_id", "user_id", "session_id", "message_id", "role", "content", "ts",
        "session_date", "speaker", "labels"}


def test_kafka_settings_check_heartbeat_against_session_timeout() -> None:
    with pytest.raises(ValueError, match="MEMSTRATA_KAFKA_HEARTBEAT_S"):
        KafkaSettings(session_timeout_s=3, heartbeat_s=2)
