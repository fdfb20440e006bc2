"""Settings of the Ray workers, read from ``MEMSTRATA_WORKERS_*`` variables.

Registered through the ``memstrata.settings`` entry point, so the core accepts
the namespace without naming it. This module imports no Ray: every start-up
loads it to check variables.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator
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


def load_workers_settings(**overrides: Any) -> WorkersSettings:
    """This namespace alone, with the errors of :func:`memstrata.config.load_config`."""
    from memstrata.config import load_namespace

    return load_namespace(WorkersSettings, **overrides)
