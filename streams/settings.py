"""Settings of the stream worker: ``MEMSTRATA_STREAM_*``.

They live here, not in core config: the core registers service namespaces
through the ``memstrata.settings`` entry point group, so adding a service
never edits ``memstrata.config``. ``MEMSTRATA_KAFKA_*`` (brokers, topic, group,
TLS/SASL) belongs to the core's :class:`memstrata.kafka.KafkaSettings`, shared
with the query service's producer: import it from there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.limits import TurnLimits

__all__ = ["StreamSettings", "check_turns_fit"]


class StreamSettings(BaseSettings):
    """How the worker batches, validates and times out (``MEMSTRATA_STREAM_*``)."""

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_STREAM_", extra="ignore",
                                      validate_default=True)

    #: A turn is searchable (provisionally if its window is open) within this many seconds.
    freshness_s: float = Field(2.0, gt=0, le=600)
    #: A session with no event for this long is closed: its open window is finalised.
    idle_s: float = Field(300.0, gt=0, le=7 * 24 * 3600)
    #: Events handled per batch (one embedding call and one upsert per store per batch).
    #: A worker that keeps up takes what arrived within half of ``freshness_s`` (far
    #: fewer); this bounds a batch when it is behind, where a larger one gives each of
    #: many open sessions more of its messages at once (fewer writes per message).
    batch_max: int = Field(1024, ge=1, le=100_000)
    #: While the worker is behind (a full batch), a session's incomplete last window
    #: waits for its next messages instead of being indexed provisionally at every
    #: message, up to this long after its last message (0: never wait, index every
    #: batch's windows).
    hold_max_s: float = Field(30.0, ge=0, le=3600)
    #: Largest accepted event value in bytes, before JSON decoding (a transport guard:
    #: the limits of a turn's fields are ``MEMSTRATA_TURN_*``, see ``check_turns_fit``).
    max_event_bytes: int = Field(256 * 1024, ge=256, le=16 * 1024 * 1024)
    #: A control event waits for the turns it follows while they are being stored; if
    #: they make no progress for this long (a stalled or bogus offset) it is applied anyway.
    control_wait_s: float = Field(30.0, ge=0, le=3600)
    #: However its turns move, a control event waits at most this long in all, then is
    #: applied (turns of its partition not stored by then are written after it).
    control_wait_max_s: float = Field(900.0, ge=0, le=7 * 24 * 3600)
    #: Port of the Prometheus /metrics endpoint (0: do not serve).
    metrics_port: int = Field(0, ge=0, le=65535)
    #: Address the /metrics endpoint binds (0.0.0.0 in a container).
    metrics_addr: str = "127.0.0.1"
    #: Log level of the worker (Faust and memstrata.stream).
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    #: ``memstrata up`` waits at most this long for the worker to drain its topics on stop.
    drain_timeout_s: float = Field(60.0, ge=0, le=3600)
    #: On stop, before leaving the consumer group, the worker waits at most this long
    #: for the batch in hand to be stored and its held windows built (past it, they are
    #: left to the partitions' next owner).
    stop_finish_s: float = Field(20.0, ge=0, le=600)
    #: Attempts to reach the stores (connection or timeout errors) before the worker
    #: stops, committing what is stored (a restart reads the rest again).
    store_attempts: int = Field(8, ge=1, le=100)
    #: Attempts to store one session the stores refuse (any other error) before its
    #: events go to the DLQ as ``store_failed`` and the rest of the batch is stored.
    store_refused_attempts: int = Field(3, ge=1, le=100)
    #: First wait between store attempts; it doubles up to ``store_backoff_max_s``.
    store_backoff_s: float = Field(0.2, ge=0, le=60)
    store_backoff_max_s: float = Field(5.0, ge=0, le=600)


def check_turns_fit(stream: StreamSettings, turns: TurnLimits) -> None:
    """ValueError unless every turn event ``turns`` accepts fits in ``max_event_bytes``.

    Else the query service could acknowledge an event the worker then dead-letters
    as too large; checked where the worker starts.
    """
    need = turns.largest_event_bytes()
    if stream.max_event_bytes < need:
        raise ValueError(
            f"MEMSTRATA_STREAM_MAX_EVENT_BYTES ({stream.max_event_bytes}) is below the largest "
            f"turn event the MEMSTRATA_TURN_* limits accept (up to {need} bytes of JSON): raise "
            f"it to at least {need}, or lower MEMSTRATA_TURN_MAX_CONTENT_CHARS")
