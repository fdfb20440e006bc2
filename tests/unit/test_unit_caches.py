"""The process caches of units: bounded, and a user's or session's entries dropped everywhere."""

from __future__ import annotations

import pytest

from memstrata.model import L0Unit, Scope
from memstrata.unit_caches import DEFAULT_ENTRIES, PerUnit, UnitCache, forget_everywhere, held_units, set_bound
from memstrata.unit_caches import MAX_ENTRIES as UNIT_MAX

A = Scope(tenant_id="t", user_id="a")
B = Scope(tenant_id="t", user_id="b")


def unit(scope: Scope, session: str, i: int) -> L0Unit:
    return L0Unit(id=f"{scope.user_id}-{session}-{i}", scope=scope, session_id=session,
                  turn_index=i + 1, summary=f"text {i}")


def test_oldest_out_first_at_the_bound() -> None:
    cache: UnitCache[int, str] = UnitCache(size=3)
    units = [unit(A, "s", i) for i in range(5)]
    for i, u in enumerate(units):
        cache.put(i, u, str(i))
    assert len(cache) == 3
    assert cache.get(0) is None and cache.get(1) is None
    assert cache.get(4) == (units[4], "4")


def test_forget_drops_a_session_then_a_user_and_nobody_else() -> None:
    cache: UnitCache[str, None] = UnitCache()
    for scope in (A, B):
        for s in ("s1", "s2"):
            for i in range(2):
                u = unit(scope, s, i)
                cache.put(u.id, u, None)
    assert cache.forget(A, "s1") == 2
    assert {u.id for u in cache.units()} == {"a-s2-0", "a-s2-1", "b-s1-0", "b-s1-1",
                                            "b-s2-0", "b-s2-1"}
    assert cache.forget(A) == 2
    assert all(u.scope == B for u in cache.units())


def test_forget_everywhere_reaches_every_live_cache() -> None:
    one: UnitCache[int, int] = UnitCache()
    two: UnitCache[int, int] = UnitCache()
    one.put(1, unit(A, "s", 1), 1)
    two.put(2, unit(A, "s", 2), 2)
    two.put(3, unit(B, "s", 3), 3)
    assert forget_everywhere(A) >= 2
    assert not [u for u in held_units() if u.scope == A]
    assert [u.id for u in two.units()] == ["b-s-3"]


def test_set_bound_sizes_the_live_caches_and_later_ones_and_refuses_out_of_range() -> None:
    live: UnitCache[int, int] = UnitCache()
    for i in range(10):
        live.put(i, unit(A, "s", i), i)
    try:
        set_bound(4)
        assert len(live) == 4 and live.get(9) is not None and live.get(5) is None
        later: UnitCache[int, int] = UnitCache()
        assert later.size == 4
        with pytest.raises(ValueError, match=r"unit_cache_entries: -1 is outside 0\.\.1000000"):
            set_bound(-1)
        assert live.size == 4
    finally:
        set_bound(DEFAULT_ENTRIES)
    assert live.size == DEFAULT_ENTRIES


def test_a_bound_of_zero_caches_nothing_and_still_derives() -> None:
    calls: list[str] = []
    derive: PerUnit[str] = PerUnit(lambda u: calls.append(u.id) or u.id, size=0)
    u = unit(A, "s", 1)
    assert derive(u) == derive(u) == u.id
    assert calls == [u.id, u.id] and len(derive) == 0


def test_the_setting_bounds_the_caches_of_a_long_running_process() -> None:
    from memstrata import process_memory
    from memstrata.config import Settings

    live: UnitCache[int, int] = UnitCache()
    try:
        process_memory.apply(Settings(unit_cache_entries=7, malloc_mmap_threshold_kb=0))
        assert live.size == 7
    finally:
        set_bound(DEFAULT_ENTRIES)
    with pytest.raises(ValueError, match="unit_cache_entries"):
        Settings(unit_cache_entries=UNIT_MAX + 1)
