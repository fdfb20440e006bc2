"""Settings of the stream service: ``MEMSTRATA_STREAM_*`` and ``MEMSTRATA_KAFKA_*``.

They live here, not in core config: the core registers service namespaces
through the ``memstrata.settings`` entry point group, so adding a service
never edits ``memstrata.config``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.kafka_security import KafkaSecuritySettings
from memstrata.limits import TurnLimits

#: File in the data dir where ``memstrata up`` records the broker it started.
BROKER_FILE = "stream-broker.json"


class StreamSettings(BaseSettings):
    """How the worker batches, validates and times out (``MEMSTRATA_STREAM_*``)."""

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_STREAM_", extra="ignore",
                                      validate_default=True)

    #: A turn is searchable (provisionally if its window is open) within this many seconds.
    freshness_s: float = Field(2.0, gt=0, le=600)
    #: A session with no event for this long is closed: its open window is finalised.
    idle_s: float = Field(300.0, gt=0, le=7 * 24 * 3600)
    #: Events handled per batch (one embedding call and one upsert per store per batch).
    batch_max: int = Field(256, ge=1, le=100_000)
    #: Largest accepted event value in bytes, before JSON decoding (a transport guard:
    #: the limits of a turn's fields are ``MEMSTRATA_TURN_*``, see ``check_turns_fit``).
    max_event_bytes: int = Field(256 * 1024, ge=256, le=16 * 1024 * 1024)
    #: A control event waits for the turns it follows while they are being stored; if
    #: they make no progress for this long (a stalled or bogus offset) it is applied anyway.
    control_wait_s: float = Field(30.0, ge=0, le=3600)
    #: Faust application id (consumer group and table changelog names derive from it).
    app_id: str = Field("memstrata-stream", pattern=r"^[A-Za-z0-9._\-]+$")
    #: Port of the Prometheus /metrics endpoint (0: do not serve).
    metrics_port: int = Field(0, ge=0, le=65535)
    #: Address the /metrics endpoint binds (0.0.0.0 in a container).
    metrics_addr: str = "127.0.0.1"
    #: Log level of the worker (Faust and memstrata.stream).
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    #: ``memstrata up`` waits at most this long for the worker to drain its topics on stop.
    drain_timeout_s: float = Field(60.0, ge=0, le=3600)
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


class KafkaSettings(KafkaSecuritySettings):
    """Where the broker is and how the consumer group behaves (``MEMSTRATA_KAFKA_*``).

    TLS and SASL fields come from :class:`memstrata.kafka_security.KafkaSecuritySettings`.
    """

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_KAFKA_", extra="ignore",
                                      validate_default=True)

    #: ``host:port[,host:port]``; unset means the broker ``memstrata up`` recorded in the data dir.
    brokers: str | None = None
    #: Partitions of every memstrata topic (turns and control must match: same key, same number).
    partitions: int = Field(4, ge=1, le=1024)
    replication: int = Field(1, ge=1, le=16)
    session_timeout_s: float = Field(10.0, ge=1, le=600)
    heartbeat_s: float = Field(1.0, gt=0, le=60)
    #: How often consumed offsets are committed (only offsets whose data is stored).
    commit_interval_s: float = Field(1.0, gt=0, le=60)
    #: Per-request timeout of producers and admin calls.
    request_timeout_s: float = Field(30.0, gt=0, le=600)
    #: Largest request the worker's producer sends (Kafka's ``max.request.size``); dead
    #: letters are cut to fit in it with room to spare.
    max_request_bytes: int = Field(1_000_000, ge=64 * 1024, le=64 * 1024 * 1024)

    def dead_letter_max_bytes(self) -> int:
        """Cap on one DLQ record: 90% of the producer's request size (framing, headers)."""
        return self.max_request_bytes * 9 // 10

    @model_validator(mode="after")
    def _check(self) -> "KafkaSettings":
        if self.heartbeat_s * 3 > self.session_timeout_s:
            raise ValueError(
                f"MEMSTRATA_KAFKA_HEARTBEAT_S ({self.heartbeat_s}) must be at most a third of "
                f"MEMSTRATA_KAFKA_SESSION_TIMEOUT_S ({self.session_timeout_s})")
        return self

    def resolve_brokers(self, data_dir: Path) -> str:
        """The brokers to use: the setting, else the address ``memstrata up`` recorded."""
        if self.brokers:
            return self.brokers
        recorded = read_broker_file(data_dir)
        if recorded is None:
            raise LookupError(
                f"no broker: set MEMSTRATA_KAFKA_BROKERS, or start one with `memstrata up` "
                f"(it records its address in {data_dir / BROKER_FILE})")
        return recorded


def read_broker_file(data_dir: Path) -> str | None:
    """The broker address recorded by a running ``memstrata up``, if any."""
    path = data_dir / BROKER_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    pid = info.get("pid")
    if isinstance(pid, int) and not _alive(pid):
        return None  # left behind by a `memstrata up` that did not stop cleanly
    brokers = info.get("brokers")
    return brokers if isinstance(brokers, str) and brokers else None


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
