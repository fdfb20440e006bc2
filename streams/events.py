"""Wire contracts of the memstrata topics (version 1), and their validation.

Every value is UTF-8 JSON. The worker receives raw bytes and applies these
models itself, so an event it cannot decode is a DLQ record with a reason, not
a crashed agent. A turn event is checked by the core's
:func:`memstrata.limits.validate_turn` with the deployment's
:class:`~memstrata.limits.TurnLimits`, the check the query service's Ingest
runs, so the worker stores every event the service accepts; the record's
byte size is :class:`~streams.settings.StreamSettings`' transport guard.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal, TypeVar

from pydantic import Field, ValidationError

from memstrata.limits import TurnLimits, TurnRefused, validate_turn
from memstrata.wire import ControlEvent, TurnEvent, WireEvent
from streams.settings import StreamSettings

__all__ = [
    "DEAD_LETTER_OVERHEAD",
    "DeadLetter",
    "Invalid",
    "L0Event",
    "decode_control",
    "decode_turn",
    "utcnow",
]

#: Names of the reasons a DLQ record can carry (also the ``reason`` label of the metric).
REASONS = ("too_large", "not_json", "bad_version", "missing_field", "bad_id", "bad_role",
           "bad_field", "bad_key", "rejected", "store_failed")

#: Bytes a dead letter needs besides the original value and key (JSON fields,
#: detail, Kafka record framing); the value is cut to fit the rest.
DEAD_LETTER_OVERHEAD = 4096
#: Longest detail text a dead letter carries.
MAX_DETAIL_CHARS = 1000
#: Longest original key a dead letter carries (legitimate keys are a few hundred bytes).
MAX_DEAD_KEY_BYTES = 1024
_E = TypeVar("_E")

_ID_FIELDS = {"tenant_id", "user_id", "session_id", "message_id"}

# TurnEvent and ControlEvent, the turns and control topics' contracts, live in the
# core (memstrata.wire): the query service produces them too. The other topics'
# events share their base.


def utcnow() -> datetime:
    return datetime.now(UTC)


class L0Event(WireEvent):
    """``memstrata.l0.v1``: units just indexed, for downstream consumers and pre-warming."""

    v: Literal[1] = 1
    tenant_id: str
    user_id: str
    session_id: str
    unit_ids: list[str]
    #: Turn indices of the units, in the order of ``unit_ids``.
    turns: list[int]
    #: The subset of ``turns`` whose window is still open (will be replaced, same id).
    provisional: list[int] = Field(default_factory=list)
    #: ``close``: written by a close (explicit or idle); ``append``: by new turns.
    cause: Literal["append", "close"] = "append"
    ts: datetime


class DeadLetter(WireEvent):
    """``memstrata.dlq.v1``: an event the worker refused, with everything needed to replay it."""

    v: Literal[1] = 1
    reason: str
    detail: str
    topic: str
    partition: int
    offset: int
    #: Original key and value, base64 (they may not be text at all). A value too
    #: large to forward is cut (``truncated``); ``value_size`` and ``value_sha256``
    #: describe the whole original, so it can be found and checked on replay.
    key_b64: str | None = None
    value_b64: str
    value_size: int = 0
    value_sha256: str = ""
    truncated: bool = False
    ts: datetime

    def original(self) -> bytes:
        """The original value (its first bytes only when ``truncated``)."""
        return base64.b64decode(self.value_b64)


class Invalid(Exception):
    """Why an event was refused: a reason code from :data:`REASONS` and a readable detail."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail

    def dead_letter(self, *, topic: str, partition: int, offset: int, key: bytes | None,
                    value: bytes, max_bytes: int | None = None) -> DeadLetter:
        """The DLQ record; with ``max_bytes`` its value is cut so the record fits in it.

        base64 grows the value by a third, so a value just under the event limit
        could otherwise make a record the producer refuses, and a refused DLQ
        send would stop the worker.
        """
        truncated = False
        if key is not None and len(key) > MAX_DEAD_KEY_BYTES:
            key, truncated = key[:MAX_DEAD_KEY_BYTES], True
        kept = value
        if max_bytes is not None:
            room = max_bytes - DEAD_LETTER_OVERHEAD - 2 * len(key or b"")
            fits = max(0, room) * 3 // 4
            if len(value) > fits:
                kept, truncated = value[:fits], True
        return DeadLetter(
            reason=self.reason, detail=self.detail[:MAX_DETAIL_CHARS], topic=topic,
            partition=partition, offset=offset,
            key_b64=base64.b64encode(key).decode() if key is not None else None,
            value_b64=base64.b64encode(kept).decode(), value_size=len(value),
            value_sha256=hashlib.sha256(value).hexdigest(), truncated=truncated, ts=utcnow())


def _load(raw: bytes | None, limits: StreamSettings) -> dict[str, object]:
    if raw is None:
        raise Invalid("not_json", "empty value (a tombstone?)")
    if len(raw) > limits.max_event_bytes:
        raise Invalid("too_large", f"value is {len(raw)} bytes, limit is "
                      f"{limits.max_event_bytes} (MEMSTRATA_STREAM_MAX_EVENT_BYTES)")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise Invalid("not_json", "cannot decode JSON: nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - bad UTF-8, bad JSON, numbers too long ...
        raise Invalid("not_json", f"cannot decode JSON: {type(exc).__name__}: "
                      f"{str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise Invalid("not_json", f"expected a JSON object, got {type(data).__name__}")
    if data.get("v") != 1:
        raise Invalid("bad_version", f"field 'v' must be 1, got {data.get('v')!r}")
    return data


def _from_validation(exc: ValidationError) -> Invalid:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ())) or "value"
    name = field.split(".")[0]
    msg = err.get("msg", "invalid")
    if err.get("type") == "missing":
        return Invalid("missing_field", f"field {field!r} is required")
    if name in _ID_FIELDS:
        return Invalid("bad_id", f"field {field!r}: {msg} (got {err.get('input')!r:.80})")
    if name == "role":
        return Invalid("bad_role", f"field 'role' must be 'user' or 'assistant', "
                       f"got {err.get('input')!r:.40}")
    return Invalid("bad_field", f"field {field!r}: {msg}")


def _check_key(key: bytes | None, ev: TurnEvent | ControlEvent) -> None:
    """The record key must be the event's user key, or its pre-ADR-0005 session key
    (records produced before the re-keying are still read during a migration)."""
    if key is not None and key != ev.key and key != ev.legacy_key:
        raise Invalid("bad_key", f"record key {key[:200]!r} does not match the event: expected "
                      f"{ev.key!r} (tenant/user/ keeps a user's events on one partition)")


def _guarded(decode: Callable[[], _E]) -> _E:
    """Run a decoder; any failure of the value becomes :class:`Invalid`, never a crash.

    The explicit checks name the field; this is the net under them (a value
    nested too deeply for the validator, a number too large for a date ...).
    """
    try:
        return decode()
    except Invalid:
        raise
    except RecursionError:
        raise Invalid("bad_field", "value nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - the value is bad, the worker is not
        raise Invalid("bad_field", f"cannot validate the value: {type(exc).__name__}: "
                      f"{str(exc)[:200]}") from None


def decode_turn(raw: bytes | None, limits: StreamSettings, key: bytes | None = None, *,
                turns: TurnLimits) -> TurnEvent:
    """Bytes from the turns topic -> a valid :class:`TurnEvent`, or :class:`Invalid`.

    ``turns`` are the core's turn-event limits, the ones the query service applies.
    """
    return _guarded(lambda: _decode_turn(raw, limits, turns, key))


def _decode_turn(raw: bytes | None, limits: StreamSettings, turns: TurnLimits,
                 key: bytes | None) -> TurnEvent:
    data = _load(raw, limits)
    try:  # the core's one check, the one the query service's Ingest runs
        ev = validate_turn(data, turns)
    except TurnRefused as refused:
        raise Invalid(refused.reason, str(refused)) from None
    _check_key(key, ev)
    return ev


def decode_control(raw: bytes | None, limits: StreamSettings,
                   key: bytes | None = None) -> ControlEvent:
    """Bytes from the control topic -> a valid :class:`ControlEvent`, or :class:`Invalid`."""
    return _guarded(lambda: _decode_control(raw, limits, key))


def _decode_control(raw: bytes | None, limits: StreamSettings,
                    key: bytes | None) -> ControlEvent:
    data = _load(raw, limits)
    try:
        ev = ControlEvent.model_validate(data)
    except ValidationError as exc:
        raise _from_validation(exc) from None
    if ev.type != "delete_user" and ev.session_id is None:
        raise Invalid("missing_field", f"field 'session_id' is required for {ev.type}")
    for partition, offset in ev.after.items():
        if partition < 0 or offset < 0:
            raise Invalid("bad_field", f"field 'after': partitions and offsets must be >= 0, "
                          f"got {partition}: {offset}")
    _check_key(key, ev)
    return ev
