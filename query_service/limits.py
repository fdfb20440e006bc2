"""Per-tenant rate and concurrency limits, and daily LLM spend budgets.

The rate limit is a token bucket (``rate_per_s`` refill, ``burst`` capacity);
the concurrency limit counts calls in flight. Both answer RESOURCE_EXHAUSTED
with a ``retry-after-ms`` hint in trailing metadata. Budgets count LLM tokens
and USD per tenant and UTC day; with a spend file the day's count survives a
restart. With a shared ledger (``MEMSTRATA_SERVICE_LEDGER=opensearch``, or
``auto`` over OpenSearch stores) the rate and the budgets
(:mod:`query_service.ledger_lease`) and the concurrency caps
(:mod:`query_service.ledger_caps`) hold across replicas; fair shares stay per
replica.

The gate reads time from an injectable clock (monotonic seconds), so its tests
step a fake clock instead of sleeping.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from query_service.keys import KeyRing
from query_service.settings import ServiceSettings
from query_service.tenant_limits import TenantLimits, limits_for

if TYPE_CHECKING:
    from query_service.ledger_caps import CapLeases
    from query_service.ledger_lease import RateLeases

_log = logging.getLogger(__name__)


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    in_flight: int = 0


class TenantGate:
    """Admits or refuses calls per tenant; all methods are called on the event loop.

    ``clock``: monotonic seconds (``time.monotonic``; tests pass a fake one).
    ``shared``: the rate across replicas (a call needs a local token and a shared
    one); None keeps the rate per process. ``caps``: the concurrency cap across
    replicas (a call needs a local slot and a leased one); None keeps it per process.
    """

    def __init__(self, settings: ServiceSettings, keys: KeyRing,
                 clock: Callable[[], float] = time.monotonic,
                 shared: RateLeases | None = None, caps: CapLeases | None = None) -> None:
        self.settings = settings
        self.keys = keys
        self.clock = clock
        self.shared = shared
        self.caps = caps
        self._buckets: dict[str, _Bucket] = {}

    def limits(self, tenant: str) -> TenantLimits:
        return limits_for(self.settings, self.keys.policy(tenant))

    def _refill(self, tenant: str, lim: TenantLimits) -> _Bucket:
        now = self.clock()
        b = self._buckets.get(tenant)
        if b is None:
            b = self._buckets[tenant] = _Bucket(tokens=float(lim.burst), stamp=now)
        b.tokens = min(float(lim.burst), b.tokens + (now - b.stamp) * lim.rate_per_s)
        b.stamp = now
        return b

    @staticmethod
    def _refusal(b: _Bucket, lim: TenantLimits) -> tuple[str, float] | None:
        if b.in_flight >= lim.max_concurrent:
            return "concurrency", 0.05
        if b.tokens < 1.0:
            return "rate", (1.0 - b.tokens) / lim.rate_per_s
        return None

    def close(self) -> None:
        """Give leased concurrency slots back (blocking: a ledger round trip)."""
        if self.caps is not None:
            self.caps.close()

    def admit(self, tenant: str) -> tuple[str, float] | None:
        """None when admitted (the caller must :meth:`release`); else (limit, retry seconds)."""
        lim = self.limits(tenant)
        b = self._refill(tenant, lim)
        refused = self._refusal(b, lim)
        slot = False
        if refused is None and self.caps is not None:
            refused = self.caps.take(tenant, lim)
            slot = refused is None
        if refused is None and self.shared is not None:
            refused = self.shared.take(tenant, lim)
        if refused is None:
            b.tokens -= 1.0
            b.in_flight += 1
        elif slot and self.caps is not None:
            self.caps.release(tenant)  # refused by the rate: the slot goes back
        return refused

    def peek(self, tenant: str) -> tuple[str, float] | None:
        """What :meth:`admit` would answer now, taking nothing (no token, no slot).

        The interceptor asks before the request is read, so a call that would be
        refused is refused without reading or decoding its message; one that
        passes is admitted (or, rarely, refused after all) by :meth:`admit`.
        """
        lim = self.limits(tenant)
        refused = self._refusal(self._refill(tenant, lim), lim)
        if refused is None and self.shared is not None:
            refused = self.shared.peek(tenant, lim)
        return refused

    def release(self, tenant: str) -> None:
        b = self._buckets.get(tenant)
        if b is not None and b.in_flight > 0:
            b.in_flight -= 1
            if self.caps is not None:
                self.caps.release(tenant)

    def weight(self, tenant: str) -> float:
        """The tenant's share of the pools (keys file ``weight``, default 1)."""
        return self.limits(tenant).weight


class SpendBook(Protocol):
    """Each tenant's LLM spend today: :class:`SpendLedger` (per process) or
    :class:`~query_service.ledger_lease.SharedSpendLedger` (across replicas)."""

    def record(self, tenant: str, tokens: int, usd: float) -> None: ...

    def spent(self, tenant: str) -> tuple[int, float]: ...

    def exhausted(self, tenant: str, lim: TenantLimits) -> str | None: ...

    def close(self) -> None: ...


@dataclass
class _Spend:
    day: str
    tokens: int = 0
    usd: float = 0.0


class SpendLedger:
    """LLM tokens and USD per tenant for the current UTC day (thread-safe).

    With ``path`` set, every change is written there (to a temporary file,
    then renamed, so a crash leaves the old or the new count, never half of
    one) and read back at start: a restart does not forgive the day's spend.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._spend: dict[str, _Spend] = self._load() if path is not None else {}

    def _load(self) -> dict[str, _Spend]:
        assert self.path is not None
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            today = self._today()
            return {tenant: _Spend(day=str(v["day"]), tokens=int(v["tokens"]),
                                   usd=float(v["usd"]))
                    for tenant, v in raw.items() if v.get("day") == today}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            # A budget must not take the service down; start counting anew, loudly.
            _log.warning("spend file %s unreadable (%s); today's spend starts at zero",
                         self.path, exc)
            return {}

    def _save(self) -> None:
        if self.path is None:
            return
        data = {t: {"day": s.day, "tokens": s.tokens, "usd": s.usd}
                for t, s in self._spend.items()}
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            _log.warning("cannot write the spend file %s: %s", self.path, exc)

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
        if tokens == 0 and usd == 0.0:  # an offline answer: nothing to count or write
            return
        with self._lock:
            s = self._entry(tenant)
            s.tokens += tokens
            s.usd += usd
            self._save()

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

    def close(self) -> None:
        """Nothing to give back: the spend file is written at every change."""
