"""``MEMSTRATA_RETENTION_*``: when ``memstrata serve`` sweeps, and how a sweep paces itself.

The policies themselves (how old a session or how idle a user may get) belong to
each tenant and live in the keys/tenants file (:mod:`memstrata.lifecycle.retention`);
these settings are the deployment's: whether the scheduled sweep runs at all, how
often, and how a sweep in Kafka mode waits for the workers. Every start-up loads
this module to check variables, so it imports pydantic only.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["RetentionSettings"]


class RetentionSettings(BaseSettings):
    """The scheduled retention sweep of ``memstrata serve`` (docs/lifecycle-retention.md)."""

    model_config = SettingsConfigDict(env_prefix="MEMSTRATA_RETENTION_", extra="forbid",
                                      validate_default=True, case_sensitive=False)

    #: Run the sweep inside ``memstrata serve`` (a tenant without a policy is never swept).
    enabled: bool = True
    #: Seconds between two sweeps (one hour by default; a policy counts in days).
    interval_s: float = Field(3600.0, ge=1.0, le=7 * 86400.0)
    #: Seconds after the service starts before its first sweep (an unfinished sweep
    #: left by a restart is finished at once, without this wait).
    first_delay_s: float = Field(60.0, ge=0.0, le=86400.0)
    #: Deletes between two flushes of the stores; each flush is noted in the sweep's
    #: journal, and a restart repeats the deletes after the last one noted.
    flush_every: int = Field(200, ge=1, le=100_000)
    #: Kafka mode: seconds a sweep waits for the stream workers to apply the delete
    #: events it published (they are applied later even when this runs out).
    apply_wait_s: float = Field(120.0, ge=0.0, le=3600.0)
