"""Shared counters for limits and budgets: one interface, one store per shape.

A :class:`Ledger` keeps counters by key, each for one period (a UTC day for
spend, a rate window for calls): a counter whose stored period is not the one
asked for counts from zero, so nothing has to sweep old periods away.

- :class:`InProcessLedger` keeps them in this process (the embedded shape, and
  a baseline for tests and benchmarks).
- :class:`~query_service.ledger_opensearch.OpenSearchLedger` keeps them in an
  OpenSearch index, so every replica of the distributed shape draws on one count.

Besides counters, a ledger keeps *leases* (:meth:`Ledger.hold`): each holder's
share of a cap with an expiry, so the shares of live holders never sum past the
cap and a holder that dies frees its share when its lease lapses (concurrency
caps, :mod:`query_service.ledger_caps`).

Replicas do not call the ledger per request: they lease slices from it
(:mod:`query_service.ledger_lease`), so the hot path stays local.
"""

from __future__ import annotations

import threading
from typing import Protocol


class LedgerUnavailable(RuntimeError):
    """The shared ledger cannot be reached (or keeps conflicting); retry later."""


class Ledger(Protocol):
    """Counters by (key, period); every method is atomic against other replicas."""

    def take(self, key: str, period: str, amount: float, cap: float | None) -> float:
        """Add up to ``amount`` to ``key`` without passing ``cap``; return what was added.

        ``cap`` None adds all of it (spend already made is booked whatever the cap).
        Raises :class:`LedgerUnavailable` when the store cannot be reached.
        """
        ...

    def give(self, key: str, period: str, amount: float) -> None:
        """Return ``amount`` (an unused lease) to ``key``; never below zero."""
        ...

    def used(self, key: str, period: str) -> float:
        """The count of ``key`` in ``period`` (0 for another period)."""
        ...

    def hold(self, key: str, holder: str, want: float, cap: float, now: float,
             ttl_s: float) -> float:
        """Set ``holder``'s lease on ``key`` to ``want``, expiring at ``now + ttl_s``.

        A lease grows only as far as ``cap`` less the other holders' unexpired
        leases allows (an expired lease of ``holder`` counts as nothing); it
        shrinks to ``want`` at once. Returns what ``holder`` now holds; 0 drops it.
        ``now``: wall seconds of the caller (replicas' clocks should agree well
        within ``ttl_s``).
        """
        ...

    def close(self) -> None:
        ...


def grant(used: float, amount: float, cap: float | None) -> float:
    """What a take of ``amount`` adds to a counter at ``used`` under ``cap``."""
    if amount <= 0:
        return 0.0
    if cap is None:
        return amount
    return max(0.0, min(amount, cap - used))


Leases = dict[str, tuple[float, float]]  # holder -> (held, expires at)


def lease(leases: Leases, holder: str, want: float, cap: float, now: float,
          ttl_s: float) -> tuple[float, Leases]:
    """What ``holder`` holds after asking for ``want``, and the leases to store."""
    live = {h: v for h, v in leases.items() if v[1] > now}
    mine = live.pop(holder, (0.0, 0.0))[0]
    others = sum(v[0] for v in live.values())
    held = float(max(0.0, min(want, max(mine, cap - others))))
    if held > 0:
        live[holder] = (held, now + ttl_s)
    return held, live


class InProcessLedger:
    """The counters in a dict under a lock: one process's own ledger."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[str, float]] = {}
        self._leases: dict[str, Leases] = {}

    def _current(self, key: str, period: str) -> float:
        stored = self._counts.get(key)
        return stored[1] if stored is not None and stored[0] == period else 0.0

    def take(self, key: str, period: str, amount: float, cap: float | None) -> float:
        with self._lock:
            used = self._current(key, period)
            added = grant(used, amount, cap)
            self._counts[key] = (period, used + added)
            return added

    def give(self, key: str, period: str, amount: float) -> None:
        with self._lock:
            used = self._current(key, period)
            self._counts[key] = (period, max(0.0, used - max(0.0, amount)))

    def used(self, key: str, period: str) -> float:
        with self._lock:
            return self._current(key, period)

    def hold(self, key: str, holder: str, want: float, cap: float, now: float,
             ttl_s: float) -> float:
        with self._lock:
            held, self._leases[key] = lease(self._leases.get(key, {}), holder, want, cap,
                                            now, ttl_s)
            return held

    def close(self) -> None:
        return None
