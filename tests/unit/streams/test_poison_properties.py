"""Property-based: no value on the turns topic stops the processor.

Arbitrary bytes, arbitrary JSON and events with extreme field values (dates at
and over the edges of the allowed range, empty and huge strings, any unicode,
nested labels) go through the real decoder and the real processor, which
writes to the MemoryWriter test double. Whatever comes in, the batch is
handled: every valid event is stored, every invalid one is dead-lettered with
its reason, and every dead letter fits the producer.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.limits import TurnLimits
from memstrata.model import Scope
from memstrata.wire import MAX_EVENT_TIME, MIN_EVENT_TIME, event_key
from streams import topics
from streams.events import REASONS, DeadLetter, Invalid, decode_turn
from streams.processor import Processor
from streams.records import Record
from streams.settings import StreamSettings
from tests.unit.streams.doubles import RecordingWriterDouble

LIMITS = StreamSettings(max_event_bytes=20_000, store_attempts=1, store_refused_attempts=1,
                        store_backoff_s=0)
TURNS = TurnLimits(max_content_chars=300, max_speaker_chars=40, max_labels=4)
DLQ_CAP = 8_000  # small, so that the cut of large values is exercised too
BOUNDED = settings(max_examples=80, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- strategies -----------------------------------------------------------------------------

ids = st.from_regex(r"[A-Za-z0-9._:@/+\-]{1,24}", fullmatch=True)
message_ids = st.text(st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
                      min_size=1, max_size=40).filter(lambda s: re.fullmatch(r"\S+", s) is not None)
text = st.text(st.characters(exclude_categories=("Cs",)))  # protobuf and UTF-8 carry no surrogates
offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


@st.composite
def times_in_range(draw: st.DrawFn) -> str:
    """An event time in the range: in UTC, or with any offset that keeps it there."""
    edge = draw(st.sampled_from(["inside", "low", "high"]))
    if edge == "low":
        return MIN_EVENT_TIME.isoformat()
    if edge == "high":
        return (MAX_EVENT_TIME - timedelta(microseconds=1)).isoformat()
    utc = draw(st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(9998, 12, 30)))
    tz = draw(st.none() | offsets)
    return utc.isoformat() if tz is None else utc.replace(tzinfo=UTC).astimezone(tz).isoformat()


@st.composite
def times_out_of_range(draw: st.DrawFn) -> str:
    low = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1899, 12, 31, 23, 59))
    high = st.datetimes(min_value=datetime(9999, 1, 1, 0, 1), max_value=datetime(9999, 12, 30))
    when = draw(low | high)
    return when.replace(tzinfo=draw(st.none() | offsets)).isoformat()


@st.composite
def valid_events(draw: st.DrawFn) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "v": 1, "tenant_id": draw(ids), "user_id": draw(ids), "session_id": draw(ids),
        "message_id": draw(message_ids), "role": draw(st.sampled_from(["user", "assistant"])),
        "content": draw(text.filter(lambda s: len(s) <= TURNS.max_content_chars)),
        "ts": draw(times_in_range())}
    if draw(st.booleans()):
        ev["session_date"] = draw(times_in_range())
    if draw(st.booleans()):
        ev["speaker"] = draw(st.text(max_size=TURNS.max_speaker_chars))
    ev["labels"] = draw(st.dictionaries(st.text(min_size=1, max_size=128),
                                        st.text(max_size=128), max_size=TURNS.max_labels))
    return ev


nested = st.recursive(st.none() | st.integers() | text,
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                      max_leaves=20).filter(lambda v: isinstance(v, (list, dict)))

#: One change that makes a valid event invalid, and the reason it must be refused for.
MUTATIONS: list[tuple[str, Any]] = [
    ("bad_field", lambda d, ev: {**ev, "ts": d(times_out_of_range())}),
    ("bad_field", lambda d, ev: {**ev, "session_date": d(times_out_of_range())}),
    ("bad_field", lambda d, ev: {**ev, "labels": {"source": d(nested)}}),
    ("bad_field", lambda d, ev: {**ev, "labels": {"": "x"}}),
    ("bad_field", lambda d, ev: {**ev, "extra": d(nested)}),
    ("too_large", lambda d, ev: {**ev, "content": "x" * (TURNS.max_content_chars + 1)}),
    ("too_large", lambda d, ev: {**ev, "labels": {str(i): "v" for i in range(9)}}),
    ("too_large", lambda d, ev: {**ev, "content": "x" * LIMITS.max_event_bytes}),
    ("bad_id", lambda d, ev: {**ev, "user_id": ev["user_id"] + "\n"}),
    ("bad_id", lambda d, ev: {**ev, "message_id": ev["message_id"] + "\n"}),
    ("bad_id", lambda d, ev: {**ev, "session_id": "a b"}),
    ("bad_id", lambda d, ev: {**ev, "tenant_id": "x" * 129}),
    ("bad_role", lambda d, ev: {**ev, "role": d(text.filter(
        lambda s: s not in ("user", "assistant")))}),
    ("missing_field", lambda d, ev: {k: v for k, v in ev.items() if k != "content"}),
    ("bad_version", lambda d, ev: {**ev, "v": d(st.integers(2, 10**6) | st.none())}),
]


@st.composite
def invalid_events(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    reason, mutate = draw(st.sampled_from(MUTATIONS))
    return mutate(draw, draw(valid_events())), reason


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=4),
    max_leaves=30)

#: (value, key, what is expected: "store", a reason, or None for "either, consistently").
Item = tuple[bytes, bytes | None, str | None]


def _key(ev: dict[str, Any]) -> bytes:
    return event_key(str(ev.get("tenant_id")), str(ev.get("user_id")), str(ev.get("session_id")))


items: st.SearchStrategy[Item] = st.one_of(
    valid_events().map(lambda ev: (json.dumps(ev).encode(), _key(ev), "store")),
    invalid_events().map(lambda p: (json.dumps(p[0]).encode(), _key(p[0]), p[1])),
    valid_events().map(lambda ev: (json.dumps(ev).encode(), b"not/the/key", "bad_key")),
    st.binary(max_size=3000).map(lambda b: (b, None, None)),
    json_values.map(lambda v: (json.dumps(v).encode(), None, None)),
    st.integers(1_100, LIMITS.max_event_bytes).map(lambda n: (b"[" * n, None, "not_json")),
)

# -- the property -----------------------------------------------------------------------------


def _process(batch: list[Item]) -> tuple[RecordingWriterDouble, list[DeadLetter], list[Record]]:
    w = RecordingWriterDouble()
    p = Processor(w, LIMITS, turns=TURNS, dead_letter_max_bytes=DLQ_CAP)
    recs = [Record(topics.TURNS, i % 2, 100 + i, key, value)
            for i, (value, key, _) in enumerate(batch)]
    try:
        out = asyncio.run(p.handle_turns(recs))
    finally:
        p.close()
    return w, out.dead, recs


def _stored(w: RecordingWriterDouble, value: bytes) -> bool:
    ev = json.loads(value)
    scope = Scope(tenant_id=ev["tenant_id"], user_id=ev["user_id"])
    return any(m.source_id == ev["message_id"]
               for m in w.messages.get((scope, ev["session_id"]), []))


@BOUNDED
@given(st.lists(items, min_size=1, max_size=8))
def test_no_value_stops_the_processor_and_each_is_stored_or_dead_lettered(
        batch: list[Item]) -> None:
    w, dead, recs = _process(batch)
    by_offset = {d.offset: d for d in dead}
    assert len(by_offset) == len(dead), "one dead letter per refused record"
    for (value, _, expected), rec in zip(batch, recs, strict=True):
        letter = by_offset.get(rec.offset)
        if expected is None:  # arbitrary input: the decoder decides, the processor follows
            try:
                decode_turn(value, LIMITS, rec.key, turns=TURNS)
                expected = "store"
            except Invalid as bad:
                expected = bad.reason
        if expected == "store":
            assert letter is None, f"valid event dead-lettered: {letter and letter.detail}"
            assert _stored(w, value)
            continue
        assert letter is not None, f"invalid event ({expected}) was not dead-lettered"
        assert letter.reason == expected, (letter.reason, letter.detail)
        assert letter.reason in REASONS and letter.detail
        assert letter.value_size == len(value) and value.startswith(letter.original())
        assert (letter.partition, letter.topic) == (rec.partition, topics.TURNS)
        assert len(letter.to_bytes()) <= DLQ_CAP


@settings(max_examples=60, deadline=None)
@given(valid_events())
def test_a_valid_event_round_trips_through_the_wire(ev: dict[str, Any]) -> None:
    got = decode_turn(json.dumps(ev).encode(), LIMITS, _key(ev), turns=TURNS)
    again = decode_turn(got.to_bytes(), LIMITS, got.key, turns=TURNS)
    assert again == got and got.ts.timestamp() == again.ts.timestamp()
    assert got.meta().scope.tenant_id == ev["tenant_id"]
