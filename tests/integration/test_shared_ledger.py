"""The shared ledger of rates, caps and budgets: one suite, every Ledger implementation (issue 37, 2).

Each test runs against the in-process ledger and against OpenSearchLedger on an
osmem-server clone. A "replica" is a limiter (SharedSpendLedger, or TenantGate
with RateLeases or CapLeases) with its own ledger handle (its own HTTP client for
OpenSearch), as two service processes would have.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

from query_service.errors import retry_after_s, status_for
from query_service.keys import KeyRing, TenantPolicy, set_tenant_policy
from query_service.ledger import InProcessLedger, Ledger, LedgerUnavailable
from query_service.ledger_caps import CapLeases
from query_service.ledger_lease import RateLeases, SharedSpendLedger
from query_service.ledger_opensearch import OpenSearchLedger
from query_service.ledger_select import open_ledgers, shared_url
from query_service.limits import SpendLedger, TenantGate, limits_for
from query_service.settings import ServiceSettings

Opener = Callable[[], Ledger]


@pytest.fixture(params=["in-process", pytest.param("opensearch", marks=pytest.mark.integration)])
def open_ledger(request: pytest.FixtureRequest) -> Iterator[Opener]:
    """Opens handles on one ledger: the same dict in-process, or new clients on one clone."""
    opened: list[Ledger] = []
    if request.param == "in-process":
        shared = InProcessLedger()

        def opener() -> Ledger:
            return shared
    else:
        url = request.getfixturevalue("osmem_clone").url

        def opener() -> Ledger:
            handle = OpenSearchLedger(url, index_prefix="t")
            opened.append(handle)
            return handle
    yield opener
    for handle in opened:
        handle.close()


class FailingLedgerDouble:
    """A Ledger test double whose store is out of reach."""

    def take(self, key: str, period: str, amount: float, cap: float | None) -> float:
        raise LedgerUnavailable("the shared ledger at test-double is unreachable")

    def give(self, key: str, period: str, amount: float) -> None:
        raise LedgerUnavailable("unreachable")

    def used(self, key: str, period: str) -> float:
        raise LedgerUnavailable("unreachable")

    def hold(self, key: str, holder: str, want: float, cap: float, now: float,
             ttl_s: float) -> float:
        raise LedgerUnavailable("unreachable")

    def close(self) -> None:
        return None


# -- the Ledger contract ----------------------------------------------------------------
def test_take_stops_at_the_cap_and_counts_per_period(open_ledger: Opener) -> None:
    ledger = open_ledger()
    assert ledger.take("k", "p1", 6, 10) == 6
    assert ledger.take("k", "p1", 6, 10) == 4  # what is left under the cap
    assert ledger.take("k", "p1", 1, 10) == 0
    assert ledger.take("k", "p1", 3, None) == 3  # booked spend passes the cap
    assert ledger.used("k", "p1") == 13
    assert ledger.used("k", "p2") == 0 and ledger.take("k", "p2", 2, 10) == 2  # new period
    ledger.give("k", "p2", 5)
    assert ledger.used("k", "p2") == 0  # never below zero
    assert ledger.used("other", "p2") == 0


def test_concurrent_takes_from_two_handles_never_pass_the_cap(open_ledger: Opener) -> None:
    handles = [open_ledger(), open_ledger()]
    got = [0.0, 0.0]

    def drain(i: int) -> None:
        while (n := handles[i].take("c", "p", 1, 40)) > 0:
            got[i] += n

    threads = [threading.Thread(target=drain, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sum(got) == 40 and handles[0].used("c", "p") == 40


# -- budgets across replicas -------------------------------------------------------------
BUDGET, COST = 2000, 37  # tokens a day; tokens one answer costs


def _spend_through(replicas: list[SharedSpendLedger] | list[SpendLedger]) -> int:
    """Each replica answers (check, then book the cost) in its own thread until refused."""
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=BUDGET))
    admitted = [0] * len(replicas)

    def answer_all(i: int) -> None:
        while replicas[i].exhausted("acme", lim) is None:
            replicas[i].record("acme", COST, 0.0)
            admitted[i] += COST

    threads = [threading.Thread(target=answer_all, args=(i,)) for i in range(len(replicas))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    return sum(admitted)


def test_a_daily_budget_spent_through_two_replicas_refuses_at_the_budget(
        open_ledger: Opener) -> None:
    """Stated error: at most one answer per replica past the budget; never twice it."""
    fraction = 0.05
    replicas = [SharedSpendLedger(open_ledger(), slice_fraction=fraction) for _ in range(2)]
    total = _spend_through(replicas)
    assert BUDGET <= total <= BUDGET + 2 * COST, total
    # The per-process ledger, for contrast, admits a budget per replica.
    assert _spend_through([SpendLedger(), SpendLedger()]) >= 2 * BUDGET
    for r in replicas:
        r.close()


def test_unspent_slices_go_back_when_a_replica_stops(open_ledger: Opener) -> None:
    ledger = open_ledger()
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=1000))
    replica = SharedSpendLedger(ledger, slice_fraction=0.1, today=lambda: "2026-12-04")
    assert replica.exhausted("acme", lim) is None  # leases 100 tokens
    replica.record("acme", 30, 0.0)
    assert ledger.used("spend/tokens/acme", "2026-12-04") == 100
    replica.close()
    assert ledger.used("spend/tokens/acme", "2026-12-04") == 30  # only what was spent


# -- rates across replicas ---------------------------------------------------------------
def _gate(tmp_path: Path, ledger: Ledger, now: list[float]) -> TenantGate:
    keys = tmp_path / "keys.json"
    set_tenant_policy(keys, "acme", TenantPolicy(rate_per_s=50, burst=1000, max_concurrent=100))
    leases = RateLeases(ledger, window_s=1.0, slice_fraction=0.1, clock=lambda: now[0])
    return TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0], shared=leases)


def test_a_rate_limit_holds_across_two_replicas(open_ledger: Opener, tmp_path: Path) -> None:
    """50 calls/s across both; each replica's slice is 5 calls (10% of the limit)."""
    now = [5000.25]
    gates = [_gate(tmp_path, open_ledger(), now) for _ in range(2)]
    admitted = 0
    for i in range(300):  # the two replicas take turns, within one window
        gate = gates[i % 2]
        if gate.admit("acme") is None:
            admitted += 1
            gate.release("acme")
    assert 50 - 2 * 5 <= admitted <= 50, admitted
    refused = gates[0].peek("acme")
    assert refused is not None and refused[0] == "rate" and 0 < refused[1] <= 0.75
    now[0] += 1.0  # the next window: both admit again
    assert gates[0].admit("acme") is None and gates[1].admit("acme") is None


# -- a ledger outage -----------------------------------------------------------------------
def test_an_outage_refuses_budgets_as_unavailable_and_halves_rates(tmp_path: Path) -> None:
    lim = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=1000,
                                                     on_budget_exhausted="refuse"))
    spend = SharedSpendLedger(FailingLedgerDouble())
    offline = limits_for(ServiceSettings(), TenantPolicy(daily_tokens=1000))
    assert "shared ledger unreachable" in (spend.exhausted("acme", offline) or "")
    with pytest.raises(LedgerUnavailable, match="cannot be checked") as caught:
        spend.exhausted("acme", lim)
    assert status_for(caught.value) == (grpc.StatusCode.UNAVAILABLE, str(caught.value))
    assert retry_after_s(caught.value) == 5.0
    spend.record("acme", 10, 0.0)  # kept as a debt, not lost, not raised
    now = [100.0]
    gate = _gate(tmp_path, FailingLedgerDouble(), now)
    admitted = sum(1 for _ in range(100) if gate.admit("acme") is None)
    assert admitted == 25  # the outage share (0.5) of 50 calls in the window


def test_an_unreachable_opensearch_ledger_is_named() -> None:
    ledger = OpenSearchLedger("http://127.0.0.1:9", timeout_s=0.5)
    with pytest.raises(LedgerUnavailable, match=r"127\.0\.0\.1:9 is unreachable"):
        ledger.take("k", "p", 1, 10)


def test_the_ledger_follows_the_stores(tmp_path: Path) -> None:
    over_os = SimpleNamespace(doc_backend="opensearch", opensearch_url="http://127.0.0.1:9")
    embedded = SimpleNamespace(doc_backend="sqlite", opensearch_url=None)
    assert shared_url(ServiceSettings(), over_os) == "http://127.0.0.1:9"
    assert shared_url(ServiceSettings(), embedded) is None
    assert shared_url(ServiceSettings(ledger="local"), over_os) is None
    with pytest.raises(ValueError, match="MEMSTRATA_OPENSEARCH_URL"):
        shared_url(ServiceSettings(ledger="opensearch"), embedded)
    spend, rate, caps = open_ledgers(ServiceSettings(), embedded, tmp_path / "spend.json")
    assert isinstance(spend, SpendLedger) and rate is None and caps is None
    spend, rate, caps = open_ledgers(ServiceSettings(ledger_lease_ttl_s=9), over_os,
                                     tmp_path / "spend.json")
    assert isinstance(spend, SharedSpendLedger) and rate is not None
    assert isinstance(caps, CapLeases) and caps.ttl_s == 9
    caps.close()


def test_a_rate_under_one_call_per_window_still_admits_its_calls(
        open_ledger: Opener, tmp_path: Path) -> None:
    """0.5 calls/s: the window grows to 2 s, one call in it across both replicas."""
    keys = tmp_path / "keys.json"
    set_tenant_policy(keys, "slow", TenantPolicy(rate_per_s=0.5, burst=5, max_concurrent=9))
    now = [4000.0]
    gates = [TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0],
                        shared=RateLeases(open_ledger(), clock=lambda: now[0]))
             for _ in range(2)]
    admitted = []
    for step in range(8):  # 4 s, half a second apart, alternating replicas
        gate = gates[step % 2]
        if gate.admit("slow") is None:
            admitted.append(now[0])
            gate.release("slow")
        now[0] += 0.5
    assert admitted == [4000.0, 4002.0], admitted


# -- concurrency caps across replicas (leases) ------------------------------------------------
def test_leases_never_sum_past_the_cap_and_lapse_unless_renewed(open_ledger: Opener) -> None:
    a, b = open_ledger(), open_ledger()
    assert a.hold("cap/x", "A", 6, 10, 100.0, 15) == 6
    assert b.hold("cap/x", "B", 6, 10, 100.0, 15) == 4  # what A's live lease leaves
    assert a.hold("cap/x", "A", 2, 10, 101.0, 15) == 2  # shrinks at once
    assert b.hold("cap/x", "B", 9, 10, 102.0, 15) == 8
    assert a.hold("cap/x", "A", 3, 10, 103.0, 15) == 2  # never below what it holds
    # A stops renewing (its replica died): its 2 slots lapse at 118.
    assert b.hold("cap/x", "B", 10, 10, 117.0, 15) == 8
    assert b.hold("cap/x", "B", 10, 10, 118.5, 15) == 10
    assert b.hold("cap/x", "B", 0, 10, 119.0, 15) == 0  # all given back
    assert a.hold("cap/x", "A", 10, 10, 119.0, 15) == 10


CAP = 10


def _capped(tmp_path: Path, ledger: Ledger, now: list[float]) -> TenantGate:
    keys = tmp_path / "keys.json"
    set_tenant_policy(keys, "acme", TenantPolicy(rate_per_s=1000, burst=1000,
                                                 max_concurrent=CAP))
    caps = CapLeases(ledger, slice_fraction=0.2, ttl_s=15.0, clock=lambda: now[0],
                     renew=False)
    return TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0], caps=caps)


def test_a_concurrency_cap_holds_across_two_replicas(open_ledger: Opener,
                                                     tmp_path: Path) -> None:
    """Stated error: none over the cap while the ledger answers; a refusal may come while
    the other replica holds up to ``spare`` idle slots, until its next renewal."""
    now = [1000.0]
    gates = [_capped(tmp_path, open_ledger(), now) for _ in range(2)]
    held = [0, 0]
    for i in range(40):  # calls arrive at both replicas in turn and none ends
        if gates[i % 2].admit("acme") is None:
            held[i % 2] += 1
    assert sum(held) == CAP and min(held) > 0, held
    # Per process, for contrast, each replica admits the whole cap.
    keys = tmp_path / "keys.json"
    alone = [TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0])
             for _ in range(2)]
    assert sum(1 for i in range(40) if alone[i % 2].admit("acme") is None) == 2 * CAP
    refused = gates[1].admit("acme")
    assert refused is not None and refused[0] == "concurrency"
    for _ in range(held[0]):  # replica 0's calls end, its slots stay leased ...
        gates[0].release("acme")
    assert gates[1].admit("acme") is not None
    now[0] += 5.0
    for g in gates:  # ... until its renewal gives back what it did not use
        assert g.caps is not None
        g.caps.renew()
    gates[0].caps.renew()  # type: ignore[union-attr]  # idle now: nothing kept
    assert gates[0].caps.held("acme") == 0  # type: ignore[union-attr]
    took = sum(1 for _ in range(40) if gates[1].admit("acme") is None)
    assert took == held[0], (took, held)


def test_a_dead_replicas_slots_come_back_when_its_lease_lapses(open_ledger: Opener,
                                                               tmp_path: Path) -> None:
    now = [2000.0]
    dead, live = (_capped(tmp_path, open_ledger(), now) for _ in range(2))
    assert all(dead.admit("acme") is None for _ in range(CAP))  # then it dies, holding all
    assert live.admit("acme") is not None
    now[0] += 15.5  # past the lease: the dead replica never renewed
    assert sum(1 for _ in range(20) if live.admit("acme") is None) == CAP


def test_an_outage_caps_each_replica_at_its_outage_share(tmp_path: Path) -> None:
    now = [3000.0]
    gate = _capped(tmp_path, FailingLedgerDouble(), now)
    assert sum(1 for _ in range(20) if gate.admit("acme") is None) == CAP // 2


def test_a_slot_refused_by_the_rate_goes_back(open_ledger: Opener, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    set_tenant_policy(keys, "acme", TenantPolicy(rate_per_s=2, burst=100, max_concurrent=CAP))
    now = [5000.25]
    caps = CapLeases(open_ledger(), clock=lambda: now[0], renew=False)
    gate = TenantGate(ServiceSettings(), KeyRing(keys), clock=lambda: now[0],
                      shared=RateLeases(open_ledger(), clock=lambda: now[0]), caps=caps)
    results = [gate.admit("acme") for _ in range(5)]
    assert [r is None for r in results] == [True, True, False, False, False]
    assert results[-1] is not None and results[-1][0] == "rate"
    gate.release("acme")
    gate.release("acme")
    now[0] += 5.0
    caps.renew()
    caps.renew()
    assert caps.held("acme") == 0  # no slot kept for the refused calls


def test_the_renewing_thread_keeps_busy_leases_and_returns_idle_ones() -> None:
    """Real time, short lease (0.3 s, renewed every 0.1 s): a live replica's slots outlast
    the lease while its calls run, and go back once it is idle."""
    ledger = InProcessLedger()
    lim = limits_for(ServiceSettings(), TenantPolicy(max_concurrent=4))
    busy = CapLeases(ledger, ttl_s=0.3)
    other = CapLeases(ledger, renew=False)
    try:
        assert all(busy.take("acme", lim) is None for _ in range(4))
        time.sleep(0.6)  # two lease lengths: only renewals keep the slots
        assert other.take("acme", lim) is not None
        for _ in range(4):
            busy.release("acme")
        deadline = time.monotonic() + 3
        while busy.held("acme") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert busy.held("acme") == 0
        assert sum(1 for _ in range(8) if other.take("acme", lim) is None) == 4
    finally:
        busy.close()
        other.close()
