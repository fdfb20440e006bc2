"""Concurrency caps across replicas: each replica leases slots of a tenant's cap.

A replica admits a call while it holds more slots than it has calls in flight.
When it holds none spare it asks the shared ledger (one round trip) for its
calls in flight plus ``spare`` more (``slice_fraction`` of the cap, at least
one), and the ledger grants only what the cap less the other replicas' live
leases leaves (:meth:`query_service.ledger.Ledger.hold`). A background thread
renews every lease each ``ttl_s / 3`` and gives back what the last period did
not use (keeping its peak of calls in flight in that period plus ``spare``
while the tenant is busy, none once it is idle). So, with ``R`` replicas:

- while the ledger answers, calls in flight across replicas never pass the cap
  (leases never sum past it);
- a tenant may be refused while another replica holds slots idle: at most its
  peak of the last renewal period plus ``spare``, less what it has in flight,
  until its next renewal (``ttl_s / 3``);
- a replica that dies frees its slots when its lease lapses (``ttl_s``);
- while the ledger cannot be reached, or a replica could not renew its lease in
  time, that replica admits up to ``outage_share`` of the cap on its own (calls
  in flight stay under the cap plus that share per replica cut off).

The hot path takes no round trip while a replica's slots cover its calls; a
round trip (a GET and a conditional write, ``bench/ledger.py``) happens when
its calls in flight grow past what it holds, plus one renewal per busy tenant
per period.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from query_service.ledger import Ledger, LedgerUnavailable
from query_service.ledger_lease import _Breaker

if TYPE_CHECKING:
    from query_service.tenant_limits import TenantLimits

#: The retry-after hint of a concurrency refusal (a slot frees when a call ends).
RETRY_S = 0.05


@dataclass
class _Slots:
    cap: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: int = 0
    in_flight: int = 0
    expires: float = 0.0  # when this replica's lease lapses in the ledger
    busy: bool = False  # a call was admitted since the last renewal
    peak: int = 0  # the most calls in flight since the last renewal


class CapLeases:
    """Each tenant's calls in flight across replicas; used by TenantGate on the event loop.

    ``clock``: wall seconds (lease expiry is compared across replicas).
    ``renew``: start the renewing thread (tests call :meth:`renew` themselves).
    """

    def __init__(self, ledger: Ledger, *, slice_fraction: float = 0.05, ttl_s: float = 15.0,
                 outage_share: float = 0.5, retry_s: float = 5.0, holder: str | None = None,
                 clock: Callable[[], float] = time.time, renew: bool = True) -> None:
        if not 0 < slice_fraction <= 1:
            raise ValueError(f"slice_fraction must be in (0, 1], got {slice_fraction}")
        self.ledger = ledger
        self.slice_fraction = slice_fraction
        self.ttl_s = ttl_s
        self.outage_share = outage_share
        self.clock = clock
        self.holder = holder or f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self.breaker = _Breaker(retry_s, time.monotonic)
        self._lock = threading.Lock()
        self._slots: dict[str, _Slots] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if renew:
            self._thread = threading.Thread(target=self._renewing, daemon=True,
                                            name="memstrata-cap-leases")
            self._thread.start()

    def spare(self, cap: int) -> int:
        """Slots a busy replica keeps beyond its calls in flight."""
        return max(1, math.ceil(self.slice_fraction * cap))

    def _hold(self, tenant: str, s: _Slots, want: int, now: float) -> None:
        s.held = int(self.ledger.hold(f"cap/{tenant}", self.holder, want, s.cap, now,
                                      self.ttl_s))
        s.expires = now + self.ttl_s

    def _entry(self, tenant: str, cap: int) -> _Slots:
        """The tenant's slots (kept for good: one small entry per tenant of the keys file)."""
        with self._lock:
            s = self._slots.get(tenant)
            if s is None:
                s = self._slots[tenant] = _Slots(cap)
            return s

    def take(self, tenant: str, lim: TenantLimits) -> tuple[str, float] | None:
        """Take one slot for a call (the caller must :meth:`release`), or refuse it."""
        now, cap = self.clock(), lim.max_concurrent
        s = self._entry(tenant, cap)
        with s.lock:  # per tenant: a renewal of another tenant never holds this call up
            s.cap = cap
            if not (s.in_flight < s.held and now < s.expires):
                if self.breaker.open:
                    room = max(1, math.floor(self.outage_share * cap))
                else:
                    try:
                        self._hold(tenant, s, s.in_flight + self.spare(cap), now)
                        room = s.held
                    except LedgerUnavailable as exc:
                        self.breaker.failed(exc)
                        room = max(1, math.floor(self.outage_share * cap))
                if s.in_flight >= room:
                    return "concurrency", RETRY_S
            s.in_flight += 1
            s.busy = True
            s.peak = max(s.peak, s.in_flight)
            return None

    def release(self, tenant: str) -> None:
        with self._lock:
            s = self._slots.get(tenant)
        if s is not None:
            with s.lock:
                s.in_flight = max(0, s.in_flight - 1)

    def renew(self) -> None:
        """Renew every lease, giving back what the last period did not use."""
        with self._lock:
            entries = list(self._slots.items())
        for tenant, s in entries:
            if self.breaker.open:
                return
            with s.lock:
                keep = s.peak + self.spare(s.cap) if s.busy else s.in_flight
                want = max(s.in_flight, min(s.held, keep))
                s.busy, s.peak = False, s.in_flight
                if want == 0 and s.held == 0:
                    continue  # nothing leased, nothing to renew
                try:
                    self._hold(tenant, s, want, self.clock())
                except LedgerUnavailable as exc:
                    self.breaker.failed(exc)
                    return

    def _renewing(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            self.renew()

    def held(self, tenant: str) -> int:
        """Slots this replica holds for ``tenant`` (for tests and metrics)."""
        with self._lock:
            s = self._slots.get(tenant)
        return s.held if s is not None else 0

    def close(self) -> None:
        """Stop renewing and give every slot back, so other replicas need not wait ``ttl_s``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            entries = list(self._slots.items())
        for tenant, s in entries:
            with s.lock:
                if s.held > 0:
                    try:
                        self._hold(tenant, s, 0, self.clock())
                    except LedgerUnavailable:
                        return  # the leases lapse after ttl_s instead
