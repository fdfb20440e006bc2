"""Turn and control events: what is accepted, and the reason each bad one is refused."""

from __future__ import annotations

import json

import pytest

from memstrata.limits import TurnLimits
from memstrata.wire import user_key
from memstrata.wire import ControlEvent, TurnEvent, event_key
from streams.events import Invalid, decode_control, decode_turn
from memstrata.kafka import KafkaSettings
from streams.settings import StreamSettings

LIMITS = StreamSettings(max_event_bytes=2000)
TURNS = TurnLimits(max_content_chars=50, max_labels=2)

GOOD = {"v": 1, "tenant_id": "acme", "user_id": "maya", "session_id": "s1",
        "message_id": "s1#1", "role": "user", "content": "hello", "ts": "2024-03-02T09:15:00Z"}


def raw(**change: object) -> bytes:
    d = {**GOOD, **change}
    return json.dumps({k: v for k, v in d.items() if v is not ...}).encode()


def reason(value: bytes, key: bytes | None = None) -> str:
    with pytest.raises(Invalid) as info:
        decode_turn(value, LIMITS, key, turns=TURNS)
    return info.value.reason


def test_good_event_round_trips_and_keys_by_user() -> None:
    """ADR 0005: a turn is keyed ``tenant/user/`` (all of a user's sessions on one partition);
    the session key it had before is still read, so records produced before the switch decode."""
    ev = decode_turn(raw(), LIMITS, b"acme/maya/", turns=TURNS)
    assert ev.key == b"acme/maya/" == user_key("acme", "maya") == event_key("acme", "maya", None)
    assert ev.legacy_key == b"acme/maya/s1" == event_key("acme", "maya", "s1")
    assert decode_turn(ev.to_bytes(), LIMITS, b"acme/maya/s1", turns=TURNS) == ev
    assert decode_turn(ev.to_bytes(), LIMITS, turns=TURNS) == ev
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
        decode_turn(raw(content="x" * 51), LIMITS, turns=TURNS)
    assert info.value.detail == ("event.content: 51 characters, limit is 50 "
                                 "(MEMSTRATA_TURN_MAX_CONTENT_CHARS)")


@pytest.mark.parametrize("key", [b"acme/maya/other", b"acme/maya", b"acme/other/", b"acme//s1"])
def test_a_key_that_does_not_match_the_event_is_refused(key: bytes) -> None:
    assert reason(raw(), key=key) == "bad_key"


def test_the_bad_key_detail_names_the_expected_user_key() -> None:
    with pytest.raises(Invalid) as info:
        decode_turn(raw(), LIMITS, b"acme/maya/other", turns=TURNS)
    assert "expected b'acme/maya/'" in info.value.detail


def test_dead_letter_keeps_the_original_bytes() -> None:
    bad = Invalid("not_json", "cannot decode")
    dead = bad.dead_letter(topic="t", partition=3, offset=17, key=b"k", value=b"\xff")
    assert dead.original() == b"\xff" and dead.partition == 3 and dead.offset == 17


def test_control_events() -> None:
    ev = ControlEvent(type="delete_user", tenant_id="acme", user_id="maya",
                      ts="2024-01-01T00:00:00Z", after={0: 3, 2: 9})
    assert ev.key == ev.legacy_key == b"acme/maya/"
    back = decode_control(ev.to_bytes(), LIMITS, ev.key)
    assert back.after == {0: 3, 2: 9}
    close = ControlEvent(type="close_session", tenant_id="acme", user_id="maya",
                         session_id="s1", ts="2024-01-01T00:00:00Z")
    # A close goes to the user's partition too (where the session's turns are), and the
    # session key it had before ADR 0005 is still read.
    assert close.key == b"acme/maya/" and close.legacy_key == b"acme/maya/s1"
    assert decode_control(close.to_bytes(), LIMITS, b"acme/maya/s1") == close
    with pytest.raises(Invalid) as bad:
        decode_control(close.to_bytes(), LIMITS, b"acme/maya/s2")
    assert bad.value.reason == "bad_key"
    missing = json.dumps({"v": 1, "type": "close_session", "tenant_id": "acme",
                          "user_id": "maya", "ts": "2024-01-01T00:00:00Z"}).encode()
    with pytest.raises(Invalid) as info:
        decode_control(missing, LIMITS)
    assert info.value.reason == "missing_field" and "session_id" in info.value.detail


def test_turn_event_fields_are_the_documented_contract() -> None:
    assert set(TurnEvent.model_fields) == {
        "v", "tenant_id", "user_id", "session_id", "message_id", "role", "content", "ts",
        "session_date", "speaker", "labels", "redacted"}


def test_kafka_settings_check_heartbeat_against_session_timeout() -> None:
    with pytest.raises(ValueError, match="MEMSTRATA_KAFKA_HEARTBEAT_S"):
        KafkaSettings(session_timeout_s=3, heartbeat_s=2)


# -- poison values (issue 16) -------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("ts", "0001-01-01T00:00:00"),
    ("ts", "1899-12-31T23:59:59Z"),
    ("ts", "1900-01-01T00:30:00+01:00"),  # 1899 in UTC
    ("ts", "9999-01-01T00:00:00"),
    ("ts", "9999-12-31T23:59:59.999999"),
    ("ts", "9998-12-31T23:30:00-14:00"),  # 9999 in UTC
    ("session_date", "0001-01-01T00:00:00+14:00"),
    ("session_date", "9999-12-31"),
])
def test_event_times_outside_the_range_are_refused_naming_the_field(field: str,
                                                                      value: str) -> None:
    with pytest.raises(Invalid) as info:
        decode_turn(raw(**{field: value}), LIMITS, turns=TURNS)
    assert info.value.reason == "bad_field"
    assert f"event.{field}:" in info.value.detail and "1900-01-01" in info.value.detail


@pytest.mark.parametrize("value", ["1900-01-01T00:00:00Z", "1900-01-01T00:00:00",
                                   "9998-12-31T23:59:59", "2024-02-29T12:00:00+05:30"])
def test_event_times_at_the_edges_of_the_range_are_kept(value: str) -> None:
    ev = decode_turn(raw(ts=value, session_date=value), LIMITS, turns=TURNS)
    assert ev.ts.timestamp() and ev.session_date is not None


def test_the_time_range_is_one_rule_in_the_core() -> None:
    from datetime import datetime

    from memstrata.wire import EVENT_TIME_RANGE, check_event_time

    with pytest.raises(ValueError, match="1900-01-01"):
        check_event_time(datetime(1, 1, 1))
    assert "9999-01-01" in EVENT_TIME_RANGE
    with pytest.raises(ValueError):  # the model the query service builds uses it too
        TurnEvent(tenant_id="a", user_id="b", session_id="s", message_id="m", role="user",
                  content="x", ts=datetime(1, 1, 1))


def test_ids_ending_in_a_newline_are_refused_everywhere() -> None:
    from memstrata.model import is_identifier
    from memstrata.limits import TurnLimits, TurnRefused, validate_turn
    from memstrata.wire import is_message_id
    from query_service.errors import InvalidArgument, check_id

    assert is_identifier("maya") and not is_identifier("maya\n")
    assert is_message_id("chat#1") and not is_message_id("chat#1\n")
    with pytest.raises(InvalidArgument, match="user_id"):
        check_id("user_id", "maya\n")
    # Ingest's check (the one the worker's decoder runs too).
    good = json.loads(raw())
    for field, value in (("user_id", "maya\n"), ("message_id", "s1#1\n")):
        with pytest.raises(TurnRefused, match=field) as refused:
            validate_turn({**good, field: value}, TurnLimits())
        assert refused.value.reason == "bad_id"
    assert reason(raw(user_id="maya\n")) == "bad_id"
    assert reason(raw(message_id="s1#1\n")) == "bad_id"


@pytest.mark.parametrize("value", [
    b"[" * 100_000,  # RecursionError in the JSON decoder
    b'{"v": 1, "labels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"v": 1, "ts": ' + b"9" * 5000 + b"}",  # int longer than Python parses
    b'{"v": 1, "ts": 1e300}',
    b'{"v": 1, "content": "\\ud800"}',  # lone surrogate
    "{\"v\": 1, \"content\": \"caf\u00e9\"}".encode("latin-1"),  # not UTF-8
])
def test_any_failure_of_the_value_is_an_invalid_event(value: bytes) -> None:
    limits = StreamSettings(max_event_bytes=400_000)
    with pytest.raises(Invalid) as info:
        decode_turn(value, limits, turns=TURNS)
    assert info.value.reason in ("not_json", "bad_field", "missing_field") and info.value.detail


def test_a_value_nested_too_deeply_for_the_validator_is_a_bad_field() -> None:
    nested: object = "x"
    for _ in range(200):
        nested = {"k": nested}
    assert reason(json.dumps({**GOOD, "labels": nested}).encode()) == "bad_field"


def test_a_dead_letter_too_large_to_send_is_cut_with_size_and_digest() -> None:
    import hashlib

    value = bytes(range(256)) * 4096  # 1 MiB
    dead = Invalid("too_large", "value is 1048576 bytes").dead_letter(
        topic="t", partition=0, offset=5, key=b"k" * 5000, value=value, max_bytes=900_000)
    record = dead.to_bytes()
    assert len(record) + 1024 <= 900_000
    assert dead.truncated and dead.value_size == len(value)
    assert dead.value_sha256 == hashlib.sha256(value).hexdigest()
    assert value.startswith(dead.original()) and len(dead.original()) > 600_000
    small = Invalid("not_json", "x").dead_letter(topic="t", partition=0, offset=1, key=None,
                                                 value=b"{oops", max_bytes=900_000)
    assert not small.truncated and small.original() == b"{oops" and small.value_size == 5
