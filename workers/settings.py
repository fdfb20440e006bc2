"""Settings of the Ray workers, read from ``MEMSTRATA_WORKERS_*`` variables.

Registered through the ``memstrata.settings`` entry point, so the core accepts
the namespace without naming it. This module imports no Ray: every start-up
loads it to check variables.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "MEMSTRATA_WORKERS_"

#: ``auto``, ``ray://host:port``, or ``host:port`` (a GCS address).
_ADDRESS = re.compile(r"^(auto|ray://[A-Za-z0-9.\-_]+:\d{1,5}|[A-Za-z0-9.\-_]+:\d{1,5})$")


class WorkersSettings(BaseSettings):
    """Where L1/L2 builds and controller rollouts run, and how much each pool takes."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      validate_default=True, case_sensitive=False)

    #: ``local``: threads in the owning process (no Ray); ``ray``: actors on a Ray cluster.
    backend: Literal["local", "ray"] = "local"
    #: ``auto`` (the cluster this node belongs to), ``ray://host:10001`` (Ray client),
    #: ``host:6379`` (GCS), or empty: start a local Ray in this process.
    ray_address: str = ""
    #: Ray namespace the named actors live in (one per deployment).
    namespace: str = Field("memstrata", pattern=r"^[A-Za-z0-9_\-]+$")
    #: The cluster's token (Ray's token authentication, ``RAY_AUTH_MODE=token``): given
    #: to ``workers head`` and ``workers node`` and sent by the service and ``workers
    #: check``. Empty: no token (a cluster that requires one refuses, named as such).
    ray_auth_token: SecretStr = SecretStr("")
    #: A file holding the token instead (a mounted Kubernetes Secret); read at start.
    ray_auth_token_file: Path | None = None
    #: Seconds start-up waits for the cluster's address to answer.
    connect_timeout_s: float = Field(5.0, gt=0, le=600)
    #: CPUs a local Ray may use when this process starts one.
    local_num_cpus: int = Field(2, ge=1, le=1024)

    # -- materializers (L1/L2 builds) --
    #: Named materializer actors; a key always goes to the same one (hash of the key).
    materializers: int = Field(2, ge=1, le=1024)
    #: Builds one materializer runs at a time.
    build_threads: int = Field(2, ge=1, le=256)
    #: Distinct builds queued or running per materializer before callers get "busy".
    build_queue: int = Field(64, ge=1, le=100_000)
    #: Retries of a failed build (with exponential backoff) before the error is reported.
    build_retries: int = Field(2, ge=0, le=20)
    build_backoff_s: float = Field(0.2, ge=0, le=60)
    build_backoff_max_s: float = Field(5.0, ge=0, le=600)
    #: A caller waits at most this long for a build (then a clear timeout error).
    build_timeout_s: float = Field(120.0, gt=0, le=3600)

    # -- rollouts (Controller.answer) --
    #: Rollout actors in the pool.
    rollout_actors: int = Field(2, ge=1, le=4096)
    #: Questions in flight per rollout actor (threads inside the actor).
    rollout_concurrency: int = Field(1, ge=1, le=256)
    #: Rollouts queued beyond those running before callers get "busy".
    rollout_queue: int = Field(256, ge=1, le=1_000_000)
    #: A caller waits at most this long for one rollout.
    rollout_timeout_s: float = Field(300.0, gt=0, le=3600)
    #: CPUs Ray reserves per rollout actor (fractions let many share a core).
    rollout_num_cpus: float = Field(0.25, ge=0, le=64)
    #: ``spread``: place rollout actors across nodes; ``pack``: fill one node first.
    placement: Literal["spread", "pack"] = "spread"

    # -- faults --
    #: Ray restarts a dead actor this many times, and retries its tasks this many times.
    max_restarts: int = Field(3, ge=0, le=1000)
    max_task_retries: int = Field(3, ge=0, le=1000)

    # -- pre-warming (consumer of memstrata.l0.v1) --
    prewarm: Literal["off", "recent", "hot"] = "off"
    #: At most this many sessions pre-warmed per minute.
    prewarm_sessions_per_min: float = Field(60.0, ge=0, le=1_000_000)
    #: With an LLM builder: at most this much estimated spend per hour on pre-warming.
    prewarm_usd_per_hour: float = Field(1.0, ge=0, le=1_000_000)
    #: ``hot``: a session qualifies after this many L0 events within ``prewarm_window_s``.
    prewarm_hot_events: int = Field(3, ge=1, le=10_000)
    prewarm_window_s: float = Field(600.0, gt=0, le=7 * 24 * 3600)

    @field_validator("ray_auth_token")
    @classmethod
    def _token(cls, v: SecretStr) -> SecretStr:
        return SecretStr(check_token(v.get_secret_value().strip(), "ray_auth_token"))

    @field_validator("ray_auth_token_file")
    @classmethod
    def _token_file(cls, v: Path | None) -> Path | None:
        if v is not None:
            try:
                text = v.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"cannot read {v}: {exc}") from None
            if not text:
                raise ValueError(f"{v} is empty")
            check_token(text, "the token in the file")
        return v

    @model_validator(mode="after")
    def _one_token(self) -> WorkersSettings:
        if self.ray_auth_token.get_secret_value() and self.ray_auth_token_file is not None:
            raise ValueError("set MEMSTRATA_WORKERS_RAY_AUTH_TOKEN or "
                             "MEMSTRATA_WORKERS_RAY_AUTH_TOKEN_FILE, not both")
        return self

    def auth_token(self) -> str:
        """The token to present to the cluster ('' when none is configured)."""
        if self.ray_auth_token_file is not None:
            return self.ray_auth_token_file.read_text(encoding="utf-8").strip()
        return self.ray_auth_token.get_secret_value()

    @field_validator("ray_address")
    @classmethod
    def _address(cls, v: str) -> str:
        v = v.strip()
        if v and not _ADDRESS.match(v):
            raise ValueError("expected 'auto', 'ray://HOST:PORT', 'HOST:PORT', or empty "
                             "(start a local Ray)")
        if v:
            port = int(v.rsplit(":", 1)[1]) if v != "auto" else 1
            if not 0 < port <= 65535:
                raise ValueError(f"port {port} is out of range 1-65535")
        return v


#: Ray sends the token in a gRPC header: printable ASCII without spaces.
_TOKEN = re.compile(r"^[\x21-\x7e]*$")
TOKEN_MIN, TOKEN_MAX = 16, 4096


def check_token(token: str, field: str) -> str:
    """``token`` when it can be a Ray token, else a ValueError naming ``field`` and the limit."""
    if not token:
        return token
    if not _TOKEN.match(token):
        raise ValueError(f"{field}: printable ASCII without spaces only")
    if not TOKEN_MIN <= len(token) <= TOKEN_MAX:
        raise ValueError(f"{field}: {len(token)} characters, expected {TOKEN_MIN}-{TOKEN_MAX} "
                         "(`ray get-auth-token --generate` or `openssl rand -hex 32` make one)")
    return token


def load_workers_settings(**overrides: Any) -> WorkersSettings:
    """This namespace alone, with the errors of :func:`memstrata.config.load_config`."""
    from memstrata.config import load_namespace

    return load_namespace(WorkersSettings, **overrides)
