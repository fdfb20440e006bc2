"""Leases: a replica's slices of a tenant's shared budget and rate, drawn from a Ledger.

A replica takes a slice (``slice_fraction`` of the limit) from the shared
:class:`~query_service.ledger.Ledger` and spends it locally; only when the
slice is used up does it go back to the ledger. The ledger's count is what all
replicas have taken (spent plus leased), and it never passes the limit, so:

- **budgets** (:class:`SharedSpendLedger`): a tenant is refused once the
  ledger is at the budget and its replica's slice is spent. Spend made past a
  slice (an answer dearer than what was left) is booked all the same. The
  day's total spend is at most the budget plus one answer per replica in
  flight, and a replica may refuse while other replicas still hold up to one
  slice each unspent (at most ``slice_fraction * budget * (replicas - 1)``).
  Slices are returned on shutdown; a crashed replica's slice is lost for the
  day (fewer calls admitted, never more).
- **rates** (:class:`RateLeases`): calls per fixed window of ``window_s``
  (longer for a rate under one call per window, so it holds one call), at most
  ``rate * window`` per window across replicas (a burst across a
  window's edge may see two windows' worth); unused slices lapse with their
  window.

When the ledger cannot be reached a budget fails safe (no slice, no LLM spend:
refusal as UNAVAILABLE or the offline answer, per the tenant's policy) and a
rate falls back to ``outage_share`` of the limit per replica until the ledger
answers again (tried at most every ``retry_s``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from query_service.ledger import Ledger, LedgerUnavailable

if TYPE_CHECKING:
    from query_service.tenant_limits import TenantLimits

_log = logging.getLogger(__name__)


def utc_day() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


class _Breaker:
    """Skips the ledger for ``retry_s`` after it failed, so an outage costs one timeout."""

    def __init__(self, retry_s: float, clock: Callable[[], float]) -> None:
        self.retry_s, self.clock = retry_s, clock
        self.down_until = 0.0

    @property
    def open(self) -> bool:
        return self.clock() < self.down_until

    def failed(self, exc: LedgerUnavailable) -> None:
        if not self.open:
            _log.warning("shared ledger unavailable (%s); next try in %.1f s", exc, self.retry_s)
        self.down_until = self.clock() + self.retry_s


@dataclass
class _Held:
    period: str
    tokens: float = 0.0
    usd: float = 0.0


class SharedSpendLedger:
    """Each tenant's LLM spend today across replicas (the interface of SpendLedger).

    ``exhausted`` draws a slice when this replica holds none; ``record`` spends
    from the slice and books any excess in the ledger at once.
    """

    def __init__(self, ledger: Ledger, *, slice_fraction: float = 0.05, retry_s: float = 5.0,
                 today: Callable[[], str] = utc_day,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < slice_fraction <= 1:
            raise ValueError(f"slice_fraction must be in (0, 1], got {slice_fraction}")
        self.ledger = ledger
        self.slice_fraction = slice_fraction
        self.today = today
        self.breaker = _Breaker(retry_s, clock)
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}

    def _entry(self, tenant: str) -> _Held:
        day = self.today()
        h = self._held.get(tenant)
        if h is None or h.period != day:
            h = self._held[tenant] = _Held(day)
        return h

    def _book(self, tenant: str, h: _Held) -> None:
        """Book a negative holding (spend past the slice) in the ledger."""
        for dim in ("tokens", "usd"):
            debt = -getattr(h, dim)
            if debt > 0:
                self.ledger.take(f"spend/{dim}/{tenant}", h.period, debt, None)
                setattr(h, dim, 0.0)

    def record(self, tenant: str, tokens: int, usd: float) -> None:
        if tokens == 0 and usd == 0.0:
            return
        with self._lock:
            h = self._entry(tenant)
            h.tokens -= tokens
            h.usd -= usd
            if self.breaker.open:
                return  # kept as a negative holding, booked when the ledger is back
            try:
                self._book(tenant, h)
            except LedgerUnavailable as exc:
                self.breaker.failed(exc)

    def spent(self, tenant: str) -> tuple[int, float]:
        """What all replicas have taken today (spent, plus slices not yet spent)."""
        with self._lock:
            h = self._entry(tenant)
            day = h.period
        tokens = self.ledger.used(f"spend/tokens/{tenant}", day)
        usd = self.ledger.used(f"spend/usd/{tenant}", day)
        return int(tokens - min(h.tokens, 0)), usd - min(h.usd, 0)

    def _draw(self, tenant: str, h: _Held, dim: str, cap: float) -> float:
        held = getattr(h, dim)
        if held > 0:
            return held
        piece = max(self.slice_fraction * cap, 1.0 if dim == "tokens" else 1e-6)
        got = self.ledger.take(f"spend/{dim}/{tenant}", h.period, piece, cap)
        setattr(h, dim, held + got)
        return held + got

    def exhausted(self, tenant: str, lim: TenantLimits) -> str | None:
        """Why the tenant may not spend more today, or None.

        Ledger down and no slice left: a reason (the offline answer) or, for a
        tenant whose policy is ``refuse``, LedgerUnavailable (UNAVAILABLE).
        """
        if lim.daily_tokens is None and lim.daily_usd is None:
            return None
        with self._lock:
            h = self._entry(tenant)
            try:
                if self.breaker.open:
                    raise LedgerUnavailable("the shared ledger failed moments ago")
                self._book(tenant, h)
                if lim.daily_tokens is not None and self._draw(
                        tenant, h, "tokens", float(lim.daily_tokens)) <= 0:
                    return f"daily LLM token budget spent (all {lim.daily_tokens} tokens)"
                if lim.daily_usd is not None and self._draw(tenant, h, "usd",
                                                            lim.daily_usd) <= 0:
                    return f"daily LLM budget spent (all ${lim.daily_usd:.4f})"
                return None
            except LedgerUnavailable as exc:
                if not self.breaker.open:
                    self.breaker.failed(exc)
                if (lim.daily_tokens is None or h.tokens > 0) and (
                        lim.daily_usd is None or h.usd > 0):
                    return None  # this replica's slice is still good
                if lim.on_budget_exhausted != "refuse":  # the offline answer spends nothing
                    return "the spend budget cannot be checked (shared ledger unreachable)"
                raise LedgerUnavailable(
                    f"tenant {tenant}: the spend budget cannot be checked, the shared ledger "
                    f"is unreachable; retry in {self.breaker.retry_s:g} s") from exc

    def close(self) -> None:
        """Give unspent slices back, so the other replicas may spend them today."""
        with self._lock:
            for tenant, h in self._held.items():
                for dim in ("tokens", "usd"):
                    left = getattr(h, dim)
                    if left > 0:
                        try:
                            self.ledger.give(f"spend/{dim}/{tenant}", h.period, left)
                        except LedgerUnavailable:
                            return
                        setattr(h, dim, 0.0)


@dataclass
class _Window:
    period: str
    held: float = 0.0
    spent: bool = False  # the ledger had nothing left for this window
    outage_left: float | None = None


class RateLeases:
    """Calls per tenant and window across replicas; used by TenantGate on the event loop.

    ``clock``: wall seconds (windows must line up across replicas).
    """

    def __init__(self, ledger: Ledger, *, window_s: float = 1.0, slice_fraction: float = 0.05,
                 outage_share: float = 0.5, retry_s: float = 5.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.ledger = ledger
        self.window_s = window_s
        self.slice_fraction = slice_fraction
        self.outage_share = outage_share
        self.clock = clock
        self.breaker = _Breaker(retry_s, time.monotonic)
        self._windows: dict[str, _Window] = {}

    def length(self, lim: TenantLimits) -> float:
        """The tenant's window: ``window_s``, or longer so that it holds one whole call."""
        return max(self.window_s, 1.0 / lim.rate_per_s)

    def _window(self, tenant: str, lim: TenantLimits) -> tuple[_Window, float]:
        now, length = self.clock(), self.length(lim)
        n = math.floor(now / length)
        period = f"{length:g}/{n}"
        w = self._windows.get(tenant)
        if w is None or w.period != period:
            w = self._windows[tenant] = _Window(period)
        return w, (n + 1) * length - now

    def peek(self, tenant: str, lim: TenantLimits) -> tuple[str, float] | None:
        """A refusal known without asking the ledger (this window is spent), or None."""
        w, left = self._window(tenant, lim)
        if w.held < 1 and w.spent:
            return "rate", max(left, 0.001)
        return None

    def take(self, tenant: str, lim: TenantLimits) -> tuple[str, float] | None:
        """Take one call from this replica's slice (drawing a new slice when empty)."""
        w, left = self._window(tenant, lim)
        if w.held >= 1:
            w.held -= 1
            return None
        if w.spent:
            return "rate", max(left, 0.001)
        cap = math.floor(lim.rate_per_s * self.length(lim))
        if not self.breaker.open:
            try:
                got = self.ledger.take(f"rate/{tenant}", w.period,
                                       max(1.0, math.ceil(self.slice_fraction * cap)), cap)
            except LedgerUnavailable as exc:
                self.breaker.failed(exc)
            else:
                w.held += got
                if w.held >= 1:
                    w.held -= 1
                    return None
                w.spent = True
                return "rate", max(left, 0.001)
        # The ledger is down: this replica's share of the limit, counted here.
        if w.outage_left is None:
            w.outage_left = self.outage_share * cap
        if w.outage_left >= 1:
            w.outage_left -= 1
            return None
        return "rate", max(left, 0.001)
