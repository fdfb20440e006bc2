"""The process caches of units: bounded, and a user's or session's entries dropped everywhere."""

from __future__ import annotations

from memstrata.model import L0Unit, Scope
from memstrata.unit_caches import UnitCache, forget_everywhere, held_units

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
