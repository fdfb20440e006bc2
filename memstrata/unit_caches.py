"""Process caches that hold L0 units, and forgetting a user's or a session's units in all of them.

Searches parse, derive and serialise the same units again and again, so three
caches keep them: the doc store's parsed units (by stored text), the
retriever's per-unit facts and the wire messages (by unit object). Each is
bounded, but an entry holds the unit's text until it is pushed out, which under
a steady load took minutes (the soak's ``serve`` grew by these caches filling).
A delete must not leave a user's text in the process, so every cache registers
here and :func:`forget_everywhere` drops the user's or the session's entries
from all of them, and :func:`set_bound` sizes all of them at once
(``MEMSTRATA_UNIT_CACHE_ENTRIES`` in ``serve``, ``up`` and ``worker``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from memstrata.model import L0Unit, Scope

K = TypeVar("K")
V = TypeVar("V")

_ALL: weakref.WeakSet[UnitCache] = weakref.WeakSet()  # type: ignore[type-arg]

#: Entries each cache holds unless told otherwise; :func:`set_bound` changes it.
DEFAULT_ENTRIES = 8192
#: The most a setting may ask for (about 30 MB of units and facts per 8,192 entries).
MAX_ENTRIES = 1_000_000
_bound = DEFAULT_ENTRIES


class UnitCache(Generic[K, V]):
    """At most ``size`` entries, each a unit and a value, oldest out first; thread-safe."""

    def __init__(self, size: int | None = None) -> None:
        self.size = _bound if size is None else size
        self._entries: dict[K, tuple[L0Unit, V]] = {}
        self._lock = threading.Lock()
        _ALL.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> tuple[L0Unit, V] | None:
        return self._entries.get(key)

    def put(self, key: K, unit: L0Unit, value: V) -> None:
        with self._lock:
            self._entries[key] = (unit, value)
            self._trim()

    def resize(self, size: int) -> None:
        """Hold at most ``size`` entries from now on (the oldest go at once)."""
        with self._lock:
            self.size = size
            self._trim()

    def _trim(self) -> None:
        while len(self._entries) > self.size:
            del self._entries[next(iter(self._entries))]

    def forget(self, scope: Scope, session_id: str | None = None) -> int:
        """Drop the entries of one user (or one of its sessions); how many went."""
        with self._lock:
            gone = [k for k, (u, _) in self._entries.items()
                    if u.scope == scope and session_id in (None, u.session_id)]
            for k in gone:
                del self._entries[k]
        return len(gone)

    def units(self) -> list[L0Unit]:
        """The units held now (a copy)."""
        with self._lock:
            return [u for u, _ in self._entries.values()]


class PerUnit(UnitCache[int, V]):
    """A value derived from each unit object, made once by ``derive``.

    Keyed by the object's identity while the entry holds the object, so a key is
    never reused by another unit; a unit whose stored text changes is parsed into
    a new object and gets a new value.
    """

    def __init__(self, derive: Callable[[L0Unit], V], size: int | None = None) -> None:
        super().__init__(size)
        self._derive = derive

    def __call__(self, unit: L0Unit) -> V:
        entry = self.get(id(unit))
        if entry is not None and entry[0] is unit:
            return entry[1]
        value = self._derive(unit)
        self.put(id(unit), unit, value)
        return value


def set_bound(entries: int) -> None:
    """Bound every cache in this process, and those made later, at ``entries`` each
    (0: nothing is cached)."""
    global _bound
    if not 0 <= entries <= MAX_ENTRIES:
        raise ValueError(f"unit_cache_entries: {entries} is outside 0..{MAX_ENTRIES}")
    _bound = entries
    for cache in list(_ALL):
        cache.resize(entries)


def forget_everywhere(scope: Scope, session_id: str | None = None) -> int:
    """Drop a user's (or a session's) units from every cache in this process."""
    return sum(cache.forget(scope, session_id) for cache in list(_ALL))


def caches() -> list[UnitCache]:  # type: ignore[type-arg]
    """Every unit cache alive in this process."""
    return list(_ALL)


def held_units() -> list[L0Unit]:
    """Every unit any cache in this process holds (for tests and diagnostics)."""
    return [u for cache in list(_ALL) for u in cache.units()]
