"""The one Kafka settings class: ``MEMSTRATA_KAFKA_*`` for every Kafka client.

The stream worker (consumer, admin, Faust app), the query service's producer
and ``memstrata produce`` all read their broker list, topic name, consumer
group, request size and TLS/SASL from this class, built once at each entry
point by :func:`memstrata.config.load_config`. Before it existed the worker and
the service each had a class sharing the prefix, and a topic set for one was
refused by (or silently ignored by) the other.

Every start-up loads this module to check variables, so it imports pydantic
and the wire contract's topic name only, and nothing else of the Kafka wing:
the TLS context, aiokafka keyword arguments and start-up diagnosis live in
:mod:`memstrata.kafka.security`, which builds on these settings (never the
other way round).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.store.lock import pid_alive
from memstrata.wire import TURNS_TOPIC

__all__ = ["BROKER_FILE", "BrokerLogin", "KafkaSettings", "pid_alive", "read_broker_file",
           "recorded_broker", "write_broker_file", "write_private"]

P = "MEMSTRATA_KAFKA_"

#: File in the data dir where ``memstrata up`` records the broker it started (mode 0600).
BROKER_FILE = "stream-broker.json"


@dataclass(frozen=True, repr=False)
class BrokerLogin:
    """The SASL login of the embedded broker: generated at each start, never logged."""

    username: str
    password: str
    mechanism: Literal["SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-256"

    @classmethod
    def generate(cls) -> "BrokerLogin":
        return cls("memstrata", secrets.token_urlsafe(32))

    def __repr__(self) -> str:
        return f"BrokerLogin({self.username!r}, mechanism={self.mechanism!r})"


def write_private(path: Path, text: str) -> None:
    """Write ``path`` atomically, readable by its owner only (0600 from the first byte)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


class KafkaSettings(BaseSettings):
    """Where the broker is, what the topics and group are called, and how to authenticate."""

    model_config = SettingsConfigDict(env_prefix=P, extra="forbid", validate_default=True,
                                      case_sensitive=False)

    #: ``host:port[,host:port]``; unset means the broker ``memstrata up`` recorded in the data dir.
    brokers: str | None = None
    #: The turns topic: the service's Ingest and ``memstrata produce`` publish to it, the
    #: stream worker reads it.
    topic_turns: str = Field(TURNS_TOPIC, pattern=r"^[A-Za-z0-9._\-]{1,249}$")
    #: The stream workers' consumer group (also the Faust application id, from which the
    #: table changelog names derive). The service waits on this group's committed offsets
    #: before a delete. Old name: ``MEMSTRATA_STREAM_APP_ID`` (still read).
    group: str = Field("memstrata-stream", pattern=r"^[A-Za-z0-9._\-]+$")
    #: Partitions of every memstrata topic (turns and control must match: same key, same number).
    partitions: int = Field(4, ge=1, le=1024)
    replication: int = Field(1, ge=1, le=16)
    #: Retention of the turns, control and l0 topics (``memstrata topics create``). The
    #: stores are the truth once a worker has stored a turn; a week leaves room to replay
    #: after an outage.
    retention_hours: int = Field(168, ge=1, le=24 * 365 * 10)
    #: Retention of the dead-letter topic (kept longer: an operator reads it by hand).
    dlq_retention_hours: int = Field(720, ge=1, le=24 * 365 * 10)
    session_timeout_s: float = Field(10.0, ge=1, le=600)
    heartbeat_s: float = Field(1.0, gt=0, le=60)
    #: How often consumed offsets are committed (only offsets whose data is stored).
    commit_interval_s: float = Field(1.0, gt=0, le=60)
    #: Per-request timeout of producers and admin calls.
    request_timeout_s: float = Field(30.0, gt=0, le=600)
    #: Largest request a producer sends (Kafka's ``max.request.size``); dead letters are
    #: cut to fit in it with room to spare.
    max_request_bytes: int = Field(1_000_000, ge=64 * 1024, le=64 * 1024 * 1024)

    # -- TLS and SASL (PLAINTEXT by default) ---------------------------------
    #: ``SSL`` and ``SASL_SSL`` encrypt; ``SASL_*`` authenticate with a user and password.
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    #: CA bundle (PEM) that signs the brokers' certificates; unset: the system's CAs.
    ssl_cafile: Path | None = None
    #: Client certificate and key (PEM) for brokers that require mutual TLS.
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_keyfile_password: SecretStr | None = None
    #: Check that the broker's certificate names the host we connect to.
    ssl_check_hostname: bool = True
    #: Seconds a failed start waits for a broker while it diagnoses the failure.
    diagnose_timeout_s: float = Field(10.0, gt=0, le=120)
    #: The embedded broker (``serve``/``up``) runs in a network namespace of its own,
    #: reachable only through its SASL gate. ``auto``: when the kernel allows unprivileged
    #: user namespaces, else on the host loopback with a warning (any local process can
    #: then reach tansu directly); ``namespace``: refuse to start without it; ``none``:
    #: never (tansu on the host loopback).
    embedded_isolation: Literal["auto", "namespace", "none"] = "auto"
    #: The embedded broker keeps every record in memory (a deleted user's too) until it
    #: stops. When its resident memory is over this many MB and the worker's group has
    #: stored every record, it is restarted empty behind the same address and login
    #: (ADR 0006). 0: never.
    embedded_recycle_rss_mb: float = Field(512.0, ge=0, le=1_048_576)
    #: How often that memory is checked (seconds).
    embedded_recycle_check_s: float = Field(10.0, gt=0, le=3600)
    #: A deleted user's or session's records stay readable in the embedded broker until
    #: it is recycled: once a delete has been applied, it is recycled at the first drained
    #: check this many seconds later, whatever its memory (ADR 0006). 0: only for memory.
    embedded_erase_within_s: float = Field(3600.0, ge=0, le=30 * 86400)

    @model_validator(mode="after")
    def _check(self) -> "KafkaSettings":
        if self.heartbeat_s * 3 > self.session_timeout_s:
            raise ValueError(
                f"{P}HEARTBEAT_S ({self.heartbeat_s}) must be at most a third of "
                f"{P}SESSION_TIMEOUT_S ({self.session_timeout_s})")
        sasl = self.security_protocol.startswith("SASL_")
        if sasl and not (self.sasl_username and self.sasl_password):
            raise ValueError(f"{P}SASL_USERNAME and {P}SASL_PASSWORD are required when "
                             f"{P}SECURITY_PROTOCOL={self.security_protocol}")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError(f"{P}SSL_CERTFILE and {P}SSL_KEYFILE go together")
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ValueError(f"{P}{name.upper()}: no such file: {path}")
        return self

    # -- brokers ---------------------------------------------------------------
    def resolve(self, data_dir: Path) -> "KafkaSettings":
        """These settings with the brokers resolved (:meth:`resolve_brokers`).

        When the address comes from the broker ``memstrata up``/``serve`` recorded, its
        per-start SASL login comes along (unless TLS/SASL were set by hand).
        """
        if self.brokers:
            return self
        recorded = recorded_broker(data_dir)
        if recorded is None:
            return self.model_copy(update={"brokers": self.resolve_brokers(data_dir)})
        brokers, login = recorded
        if login is None or self.security_protocol != "PLAINTEXT":
            return self.model_copy(update={"brokers": brokers})
        return self.with_login(brokers, login)

    def with_login(self, brokers: str, login: BrokerLogin) -> "KafkaSettings":
        """A copy that reaches ``brokers`` over SASL (no TLS: loopback only) as ``login``."""
        return self.model_copy(update={
            "brokers": brokers, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": login.mechanism, "sasl_username": login.username,
            "sasl_password": SecretStr(login.password)})

    def resolve_brokers(self, data_dir: Path) -> str:
        """The brokers to use: the setting, else the address ``memstrata up`` recorded."""
        if self.brokers:
            return self.brokers
        recorded = read_broker_file(data_dir)
        if recorded is None:
            raise LookupError(
                f"no broker: set {P}BROKERS, or start one with `memstrata up` "
                f"(it records its address in {data_dir / BROKER_FILE})")
        return recorded

    def dead_letter_max_bytes(self) -> int:
        """Cap on one DLQ record: 90% of the producer's request size (framing, headers)."""
        return self.max_request_bytes * 9 // 10

    # -- TLS and SASL ----------------------------------------------------------
    @property
    def tls(self) -> bool:
        """Whether the clients speak TLS to the brokers (``SSL``, ``SASL_SSL``)."""
        return self.security_protocol in ("SSL", "SASL_SSL")


def write_broker_file(data_dir: Path, brokers: str, *, login_file: Path | None = None,
                      login: BrokerLogin | None = None, isolated: bool | None = None) -> Path:
    """Record the embedded broker for commands in other shells (0600).

    The login's password stays in ``login_file`` (0600, in a 0700 directory); this
    file names it, relative to the data dir.
    """
    info: dict[str, Any] = {"brokers": brokers, "pid": os.getpid(), "started": time.time()}
    if login is not None and login_file is not None:
        info["sasl"] = {"mechanism": login.mechanism, "username": login.username,
                        "password_file": os.path.relpath(login_file, data_dir)}
    if isolated is not None:
        info["isolated"] = isolated
    path = data_dir / BROKER_FILE
    write_private(path, json.dumps(info))
    return path


def _recorded(data_dir: Path) -> dict[str, Any] | None:
    path = data_dir / BROKER_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    pid = info.get("pid")
    if isinstance(pid, int) and not pid_alive(pid):
        return None  # left behind by a `memstrata up` that did not stop cleanly
    brokers = info.get("brokers")
    return info if isinstance(brokers, str) and brokers else None


def read_broker_file(data_dir: Path) -> str | None:
    """The broker address recorded by a running ``memstrata up``, if any."""
    info = _recorded(data_dir)
    return None if info is None else str(info["brokers"])


def recorded_broker(data_dir: Path) -> tuple[str, BrokerLogin | None] | None:
    """The recorded broker's address and SASL login (None: no broker recorded).

    PermissionError when the login file exists but is not ours to read.
    """
    info = _recorded(data_dir)
    if info is None:
        return None
    sasl = info.get("sasl")
    if not isinstance(sasl, dict):
        return str(info["brokers"]), None
    try:
        password = (data_dir / str(sasl["password_file"])).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None  # the broker stopped between the two reads
    mechanism = sasl.get("mechanism", "SCRAM-SHA-256")
    if mechanism not in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        raise ValueError(f"{data_dir / BROKER_FILE}: unknown SASL mechanism {mechanism!r}")
    return str(info["brokers"]), BrokerLogin(str(sasl["username"]), password, mechanism)


