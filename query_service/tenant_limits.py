"""What one tenant may use: its rate, burst, concurrency cap, budgets and weight.

Its own module so that the gate (:mod:`query_service.limits`) and the shared
ledgers it leases from (:mod:`query_service.ledger_lease`,
:mod:`query_service.ledger_caps`) share the type without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from query_service.keys import TenantPolicy
from query_service.settings import ServiceSettings


@dataclass
class TenantLimits:
    rate_per_s: float
    burst: int
    max_concurrent: int
    daily_tokens: int | None
    daily_usd: float | None
    on_budget_exhausted: str
    #: Share of the read and answer pools under contention (query_service.scheduler).
    weight: float = 1.0


def limits_for(settings: ServiceSettings, policy: TenantPolicy) -> TenantLimits:
    def pick(value: object, default: object) -> object:
        return default if value is None else value

    return TenantLimits(
        rate_per_s=float(pick(policy.rate_per_s, settings.rate_per_s)),  # type: ignore[arg-type]
        burst=int(pick(policy.burst, settings.burst)),  # type: ignore[call-overload]
        max_concurrent=int(pick(policy.max_concurrent,  # type: ignore[call-overload]
                                settings.max_concurrent)),
        daily_tokens=policy.daily_tokens, daily_usd=policy.daily_usd,
        on_budget_exhausted=str(pick(policy.on_budget_exhausted, settings.on_budget_exhausted)),
        weight=float(pick(policy.weight, 1.0)))  # type: ignore[arg-type]
