"""Per-tenant rate and concurrency limits, and daily LLM spend budgets.

The rate limit is a token bucket (``rate_per_s`` refill, ``burst`` capacity);
the concurrency limit counts calls in flight. Both answer RESOURCE_EXHAUSTED
with a ``retry-after-ms`` hint in trailing metadata. Budgets count LLM tokens
and USD per tenant and UTC day, in this process (a restart forgives the day).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from query_service.keys import KeyRing, TenantPolicy
from query_service.settings import ServiceSettings


@dataclass
class TenantLimits:
    rate_per_s: float
    burst: int
    max_concurrent: int
    daily_tokens: int | None
    daily_usd: float | None
    on_budget_exhausted: str


def limits_for(settings: ServiceSettings, policy: TenantPolicy) -> TenantLimits:
    def pick(value: object, default: object) -> object:
        return default if value is None else value

    return TenantLimits(
        rate_per_s=float(pick(policy.rate_per_s, settings.rate_per_s)),  # type: ignore[arg-type]
        burst=int(pick(policy.burst, settings.burst)),  # type: ignore[call-overload]
        max_concurrent=int(pick(policy.max_concurrent,  # type: ignore[call-overload]
                                settings.max_concurrent)),
        daily_tokens=policy.daily_tokens, daily_usd=policy.daily_usd,
        on_budget_exhausted=str(pick(policy.on_budget_exhausted, settings.on_budget_exhausted)))


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    in_flight: int = 0


class TenantGate:
    """Admits or refuses calls per tenant; all methods are called on the event loop."""

    def __init__(self, settings: ServiceSettings, keys: KeyRing) -> None:
        self.settings = settings
        self.keys = keys
        self._buckets: dict[str, _Bucket] = {}

    def limits(self, tenant: str) -> TenantLimits:
        return limits_for(self.settings, self.keys.policy(tenant))

    def admit(self, tenant: str) -> tuple[str, float] | None:
        """None when admitted (the caller must :meth:`release`); else (limit, retry seconds)."""
        lim = self.limits(tenant)
        now = time.monotonic()
        b = self._buckets.get(tenant)
        if b is None:
            b = self._buckets[tenant] = _Bucket(tokens=float(lim.burst), stamp=now)
        b.tokens = min(float(lim.burst), b.tokens + (now - b.stamp) * lim.rate_per_s)
        b.stamp = now
        if b.in_flight >= lim.max_concurrent:
            return "concurrency", 0.05
        if b.tokens < 1.0:
            return "rate", (1.0 - b.tokens) / lim.rate_per_s
        b.tokens -= 1.0
        b.in_flight += 1
        return None

    def release(self, tenant: str) -> None:
        b = self._buckets.get(tenant)
        if b is not None and b.in_flight > 0:
            b.in_flight -= 1


@dataclass
class _Spend:
    day: str
    tokens: int = 0
    usd: float = 0.0


@dataclass
class SpendLedger:
    """LLM tokens and USD per tenant for the current UTC day (thread-safe)."""

    _spend: dict[str, _Spend] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def _today() -> str:
        return datetime.now(timezone.utc).strftime("%Y-%m-%d")

    def _entry(self, tenant: str) -> _Spend:
        today = self._today()
        s = self._spend.get(tenant)
        if s is None or s.day != today:
            s = self._spend[tenant] = _Spend(day=today)
        return s

    def record(self, tenant: str, tokens: int, usd: float) -> None:
        with self._lock:
            s = self._entry(tenant)
            s.tokens += tokens
            s.usd += usd

    def spent(self, tenant: str) -> tuple[int, float]:
        with self._lock:
            s = self._entry(tenant)
            return s.tokens, s.usd

    def exhausted(self, tenant: str, lim: TenantLimits) -> str | None:
        """Why the tenant may not spend more today, or None."""
        tokens, usd = self.spent(tenant)
        if lim.daily_tokens is not None and tokens >= lim.daily_tokens:
            return f"daily LLM token budget spent ({tokens} of {lim.daily_tokens} tokens)"
        if lim.daily_usd is not None and usd >= lim.daily_usd:
            return f"daily LLM budget spent (${usd:.4f} of ${lim.daily_usd:.4f})"
        return None
