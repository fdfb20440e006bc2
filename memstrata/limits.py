"""Limits on a turn event, and the one check that applies them.

The query service's ``Ingest`` and the stream worker's decoder both turn
input into a :class:`~memstrata.wire.TurnEvent` through :func:`validate_turn`
with the same :class:`TurnLimits`, so an event the service accepts is one the
worker stores: nothing is acknowledged and then dead-lettered. A refusal is a
:class:`TurnRefused` that names the field, the limit and the variable; the
service answers it with INVALID_ARGUMENT, the worker dead-letters it under
its reason code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.model import MAX_CONTENT_CHARS, MAX_ID_LEN
from memstrata.wire import TurnEvent

__all__ = ["ENV_PREFIX", "MAX_LABEL_CHARS", "MAX_TOP_K", "SERVICE_MAX_TOP_K", "TopKRefused",
           "check_top_k", "MAX_SPEAKER_CHARS", "RefusalReason", "TurnLimits",
           "TurnRefused", "check_turn", "validate_turn"]

ENV_PREFIX = "MEMSTRATA_TURN_"
#: Hard caps of the settings below (the model's own content cap is MAX_CONTENT_CHARS).
MAX_SPEAKER_CHARS = 1024
MAX_LABEL_CHARS = 1024

#: The most hits one search may ask for, at every edge: the library's default limit
#: (``MEMSTRATA_MAX_TOP_K``) and the ceiling of both top_k settings.
MAX_TOP_K = 1000
#: The query service's default limit (``MEMSTRATA_SERVICE_MAX_TOP_K``): tighter than the
#: library's, since a remote caller shares the server; never above :data:`MAX_TOP_K`.
SERVICE_MAX_TOP_K = 100

#: The dead-letter reason codes a refusal maps to (a subset of ``streams.events.REASONS``).
RefusalReason = Literal["too_large", "missing_field", "bad_id", "bad_role", "bad_field"]

_ID_FIELDS = ("tenant_id", "user_id", "session_id")


class TurnLimits(BaseSettings):
    """How large a turn event may be (``MEMSTRATA_TURN_*``), for every route into memory.

    One class for the service and the worker: two copies drifted apart once
    (the service took 100,000 characters, the worker dead-lettered above 20,000).
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      validate_default=True, case_sensitive=False)

    #: Longest message content in characters (never above the model's own cap).
    max_content_chars: int = Field(20_000, ge=1, le=MAX_CONTENT_CHARS)
    #: Longest speaker name in characters.
    max_speaker_chars: int = Field(128, ge=1, le=MAX_SPEAKER_CHARS)
    #: Most session labels one event may carry.
    max_labels: int = Field(16, ge=0, le=256)
    #: Longest label key, and longest label value, in characters.
    max_label_chars: int = Field(128, ge=1, le=MAX_LABEL_CHARS)

    @staticmethod
    def variable(name: str) -> str:
        return ENV_PREFIX + name.upper()

    def largest_event_bytes(self) -> int:
        """An upper bound on the JSON size of any event within these limits.

        Six bytes a character (a control character is written ``\\u001f``), for
        the text fields, plus room for the fixed fields: a transport limit at or
        above this never refuses an event these limits accept.
        """
        text = (self.max_content_chars + self.max_speaker_chars + MAX_ID_LEN
                + self.max_labels * 2 * self.max_label_chars) * 6
        return text + 3 * MAX_ID_LEN + self.max_labels * 8 + 1024


class TurnRefused(ValueError):
    """A turn event broke a rule: ``reason`` is the DLQ code, the message names the field."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.reason: RefusalReason = reason


def _over(where: str, what: str, n: int, unit: str, limit: int, var: str) -> TurnRefused:
    return TurnRefused("too_large", f"{where}.{what}: {n} {unit}, limit is {limit} ({var})")


def check_turn(event: TurnEvent, limits: TurnLimits, *, where: str = "event") -> TurnEvent:
    """``event`` if it is within ``limits``, else :class:`TurnRefused` (``too_large``).

Empty content is accepted, as the topic always has (a LongMemEval haystack
holds empty messages; refusing them would make ``produce`` and ``ingest`` of
one file differ).
"""
    if len(event.content) > limits.max_content_chars:
        raise _over(where, "content", len(event.content), "characters",
                    limits.max_content_chars, limits.variable("max_content_chars"))
    if event.speaker is not None and len(event.speaker) > limits.max_speaker_chars:
        raise _over(where, "speaker", len(event.speaker), "characters",
                    limits.max_speaker_chars, limits.variable("max_speaker_chars"))
    if len(event.labels) > limits.max_labels:
        raise _over(where, "labels", len(event.labels), "labels", limits.max_labels,
                    limits.variable("max_labels"))
    for key, value in event.labels.items():
        for part, text in (("key", key), ("value", value)):
            if len(text) > limits.max_label_chars:
                raise _over(where, f"labels[{key[:40]!r}] {part}", len(text), "characters",
                            limits.max_label_chars, limits.variable("max_label_chars"))
    return event


def validate_turn(data: Mapping[str, Any], limits: TurnLimits, *,
                  where: str = "event") -> TurnEvent:
    """Input fields -> a :class:`TurnEvent` within ``limits``, or :class:`TurnRefused`.

    The one check of a turn event: the schema (ids, role, event times) and
    then the limits. ``where`` prefixes every message (``events[3]``).
    """
    try:
        event = TurnEvent.model_validate(data)
    except ValidationError as exc:
        raise _refusal(where, exc) from None
    return check_turn(event, limits, where=where)


def _refusal(where: str, exc: ValidationError) -> TurnRefused:
    """The first schema error as a refusal naming the field."""
    err = exc.errors()[0]
    loc = [str(p) for p in err.get("loc", ())]
    name = loc[0] if loc else ""
    field = f"{where}.{'.'.join(loc)}" if loc else where
    value = err.get("input")
    if err.get("type") == "missing" or (name in (*_ID_FIELDS, "message_id")
                                        and value in ("", None)):
        return TurnRefused("missing_field", f"{field}: required")
    if name in _ID_FIELDS or name == "message_id":
        if isinstance(value, str) and len(value) > MAX_ID_LEN:
            return TurnRefused("bad_id", f"{field}: {len(value)} characters, limit is "
                                         f"{MAX_ID_LEN}")
        rule = ("letters, digits and . _ : @ / + - only (no spaces)" if name in _ID_FIELDS
                else "printable text without whitespace")
        return TurnRefused("bad_id", f"{field}: {rule}, at most {MAX_ID_LEN} characters "
                                     f"(got {value!r:.80})")
    if name == "role":
        return TurnRefused("bad_role", f"{field}: must be 'user' or 'assistant' "
                                       f"(got {value!r:.40})")
    cause = (err.get("ctx") or {}).get("error")
    why = str(cause) if cause is not None else err.get("msg", "invalid")
    return TurnRefused("bad_field", f"{field}: {why}")


class TopKRefused(ValueError):
    """A search asked for more hits than its edge allows; the message names field and limit."""


def check_top_k(top_k: int, limit: int, variable: str, *, field: str = "top_k") -> int:
    """``top_k`` if it is 1..``limit``, else :class:`TopKRefused` naming ``variable``.

    The one check of a search's size, for the library (``Memory.search``) and the
    query service's ``Search``, so both refuse in the same words.
    """
    if not 1 <= top_k <= limit:
        raise TopKRefused(f"{field}: must be between 1 and {limit}, got {top_k} ({variable})")
    return top_k
