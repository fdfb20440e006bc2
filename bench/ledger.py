"""Limits and budgets across replicas: per-process vs the shared ledger, side by side.

```bash
.venv/bin/python -m bench.ledger [--calls 4000]
```

One osmem-server (the OpenSearch stand-in) holds the shared ledger. A replica
is a limiter with its own ledger handle (its own HTTP client), as a service
process has; replicas run in threads of this process.

* **budget**: one tenant's daily budget (20 000 tokens, 37 per answer) spent
  through 1 and 2 replicas that answer until refused: tokens admitted vs the
  budget, with the per-process SpendLedger and with the shared one;
* **rate**: one tenant at 200 calls/s, calls from 1 and 2 replicas inside one
  window: calls admitted vs the limit, per process and shared;
* **cap**: one tenant capped at 20 calls in flight, calls arriving at 1 and 2
  replicas in turn and none ending: calls admitted vs the cap, per process and
  with leased slots (``query_service.ledger_caps``);
* **overhead**: microseconds per ``TenantGate.admit`` + ``release`` with the
  rate per process, leased from the in-process ledger, and leased from
  OpenSearch (5% slices: one round trip per 10 calls at 200/s), and per budget
  check + booking of one answer (100 000-token budget: a round trip per 135
  answers), and per admit + release with the concurrency cap leased from
  OpenSearch, calls in flight rising to 16 and falling back to 0 in each
  cycle (renewals every 16 cycles), with the ledger round trips per call.
  Results in ``bench/out/ledger.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from osmem_server import OsmemServer

from bench._common import OUT_DIR, load_average, print_table
from query_service.keys import KeyRing, TenantPolicy, set_tenant_policy
from query_service.ledger import InProcessLedger, Ledger
from query_service.ledger_caps import CapLeases
from query_service.ledger_lease import RateLeases, SharedSpendLedger
from query_service.ledger_opensearch import OpenSearchLedger
from query_service.limits import SpendBook, SpendLedger, TenantGate, limits_for
from query_service.settings import ServiceSettings

BUDGET, COST, RATE, CAP = 20_000, 37, 200.0, 20


def spend(replicas: list[SpendBook]) -> int:
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=BUDGET))
    admitted = [0] * len(replicas)

    def run(i: int) -> None:
        while replicas[i].exhausted("acme", lim) is None:
            replicas[i].record("acme", COST, 0.0)
            admitted[i] += COST

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(replicas))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(admitted)


def gate(keys: Path, ledger: Ledger | None, clock: Callable[[], float]) -> TenantGate:
    shared = None if ledger is None else RateLeases(ledger, slice_fraction=0.05, clock=clock)
    return TenantGate(ServiceSettings(), KeyRing(keys), clock=clock, shared=shared)


def rate(keys: Path, ledgers: list[Ledger | None]) -> int:
    now = [7000.25]
    gates = [gate(keys, led, lambda: now[0]) for led in ledgers]
    admitted = 0
    for i in range(1000):
        g = gates[i % len(gates)]
        if g.admit("acme") is None:
            admitted += 1
            g.release("acme")
    return admitted


def capped(keys: Path, ledgers: list[Ledger | None]) -> int:
    """Calls admitted with none ending, arriving at the replicas in turn."""
    now = [8000.0]
    gates = [TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0],
                        caps=None if led is None else CapLeases(led, renew=False))
             for led in ledgers]
    return sum(1 for i in range(100) if gates[i % len(gates)].admit("capped") is None)


class CountingLedger:
    """The OpenSearch ledger, counting its lease round trips."""

    def __init__(self, inner: OpenSearchLedger) -> None:
        self.inner, self.holds = inner, 0

    def hold(self, key: str, holder: str, want: float, cap: float, now: float,
             ttl_s: float) -> float:
        self.holds += 1
        return self.inner.hold(key, holder, want, cap, now, ttl_s)

    def take(self, key: str, period: str, amount: float, cap: float | None) -> float:
        return self.inner.take(key, period, amount, cap)

    def give(self, key: str, period: str, amount: float) -> None:
        self.inner.give(key, period, amount)

    def used(self, key: str, period: str) -> float:
        return self.inner.used(key, period)

    def close(self) -> None:
        self.inner.close()


def overhead_cap(keys: Path, ledger: Ledger | None, calls: int) -> list[float]:
    """Per admit + release seconds, in flight rising to 16 and back each cycle."""
    now = [9500.0]
    caps = None if ledger is None else CapLeases(ledger, renew=False, clock=lambda: now[0])
    g = TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0], caps=caps)
    out = []
    for cycle in range(max(1, calls // 16)):
        for _ in range(16):
            now[0] += 0.001
            t = time.perf_counter()
            assert g.admit("capped") is None
            out.append(time.perf_counter() - t)
        for _ in range(16):
            t = time.perf_counter()
            g.release("capped")
            out[-16] += time.perf_counter() - t
        if caps is not None and cycle % 16 == 15:
            now[0] += 5.0
            caps.renew()  # what the renewing thread does every ttl / 3
    return out


def overhead_admit(keys: Path, ledger: Ledger | None, calls: int) -> list[float]:
    """Per-call seconds; the fake clock moves 1/RATE per call, so none is refused."""
    now = [9000.0]
    g = gate(keys, ledger, lambda: now[0])
    out = []
    for _ in range(calls):
        now[0] += 1.0 / RATE
        t = time.perf_counter()
        assert g.admit("acme") is None
        g.release("acme")
        out.append(time.perf_counter() - t)
    return out


def overhead_budget(book: SpendBook, calls: int) -> list[float]:
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=100_000))
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        book.exhausted("bench", lim)
        book.record("bench", COST, 0.0)
        out.append(time.perf_counter() - t)
    return out


def stats_us(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.fmean(xs) * 1e6, xs[int(0.99 * (len(xs) - 1))] * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=4000)
    args = ap.parse_args()
    result: dict[str, Any] = {"load_average": load_average()}
    with tempfile.TemporaryDirectory() as tmp, OsmemServer.start() as server:
        keys = Path(tmp) / "keys.json"
        set_tenant_policy(keys, "acme", TenantPolicy(rate_per_s=RATE, burst=int(RATE),
                                                     max_concurrent=100))
        set_tenant_policy(keys, "capped", TenantPolicy(rate_per_s=1e6, burst=1_000_000,
                                                       max_concurrent=CAP))
        opened: list[OpenSearchLedger] = []

        def os_ledger(clone_url: str) -> OpenSearchLedger:
            handle = OpenSearchLedger(clone_url, index_prefix="bench")
            opened.append(handle)
            return handle

        rows = []
        for n in (1, 2):
            with server.clone() as c:
                local = spend([SpendLedger() for _ in range(n)])
                shared = spend([SharedSpendLedger(os_ledger(c.url)) for _ in range(n)])
                local_rate = rate(keys, [None] * n)
                shared_rate = rate(keys, [os_ledger(c.url) for _ in range(n)])
                local_cap = capped(keys, [None] * n)
                shared_cap = capped(keys, [os_ledger(c.url) for _ in range(n)])
            result[f"replicas_{n}"] = {"budget_local": local, "budget_shared": shared,
                                      "rate_local": local_rate, "rate_shared": shared_rate,
                                      "cap_local": local_cap, "cap_shared": shared_cap}
            rows.append([n, f"{local} ({local / BUDGET:.2f}x)",
                         f"{shared} ({shared / BUDGET:.3f}x)",
                         f"{local_rate} ({local_rate / RATE:.2f}x)",
                         f"{shared_rate} ({shared_rate / RATE:.2f}x)",
                         f"{local_cap} ({local_cap / CAP:.2f}x)",
                         f"{shared_cap} ({shared_cap / CAP:.2f}x)"])
        print_table(f"admitted vs limit (budget {BUDGET} tokens, rate {RATE:g}/s, one window, "
                    f"cap {CAP} in flight)",
                    ["replicas", "budget per process", "budget shared", "rate per process",
                     "rate shared", "cap per process", "cap shared"], rows)
        with server.clone() as c:
            counting = CountingLedger(os_ledger(c.url))
            series = {
                "admit, per process": overhead_admit(keys, None, args.calls),
                "admit, in-process ledger": overhead_admit(keys, InProcessLedger(), args.calls),
                "admit, OpenSearch ledger": overhead_admit(keys, os_ledger(c.url), args.calls),
                "budget, per process": overhead_budget(SpendLedger(), args.calls // 4),
                "budget, OpenSearch ledger": overhead_budget(
                    SharedSpendLedger(os_ledger(c.url)), args.calls // 4),
                "cap, per process": overhead_cap(keys, None, args.calls),
                "cap, OpenSearch leases": overhead_cap(keys, counting, args.calls),
            }
        result["cap_round_trips_per_call"] = counting.holds / args.calls
        result["overhead_us"] = {k: dict(zip(("mean", "p99"), stats_us(v)))
                                 for k, v in series.items()}
        print_table("per-call cost (us)", ["path", "mean", "p99"],
                    [[k, f"{v['mean']:.1f}", f"{v['p99']:.0f}"]
                     for k, v in result["overhead_us"].items()])
        for handle in opened:
            handle.close()
    print(f"cap leases: {result['cap_round_trips_per_call']:.4f} ledger round trips per call")
    print(f"load average {result['load_average']:.2f}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "ledger.json").write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
