"""Memo caches for the text helpers, with one process-wide cap on their entries.

Words, phrases and lines are normalised, stemmed and parsed again and again, so
about twenty helpers keep their results in an LRU cache of up to 65,536 entries
each. Each is bounded, but real traffic keeps bringing new words and texts, so
together they take hours to fill and hold tens of MB when they have (the hour
soak's ``serve`` was still rising from them). :func:`set_cap` bounds every such
cache at once (``MEMSTRATA_CACHE_MAX_ENTRIES`` in ``serve``, ``up`` and
``worker``), so a deployment can trade a little speed for a smaller, flat heap,
and a soak can fill them within minutes.

Functions that are called once per process (``maxsize=1`` loaders) keep
:func:`functools.lru_cache`: they hold no data that grows.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

#: The most a setting may ask for.
MAX_CAP = 1_000_000

_lock = threading.Lock()
_cap: int | None = None
_all: list[Memo[Any, Any]] = []


class Memo(Generic[P, R]):
    """The handle of one memoised function: its own bound, and what it holds now.

    The function itself is a plain closure (a call costs a bare ``lru_cache`` call
    plus one indirection); this object is reachable as its ``memo`` attribute.
    """

    def __init__(self, fn: Callable[P, R], maxsize: int) -> None:
        self.fn = fn
        self.maxsize = maxsize
        self.cached: Callable[P, R] = functools.lru_cache(maxsize=self.bound())(fn)

    def bound(self) -> int:
        """Entries this cache may hold now: its own bound, under the process cap."""
        return capped(self.maxsize)

    def rebuild(self) -> None:
        """Start again, empty, at :meth:`bound` (the old entries go with the old cache)."""
        self.cached = functools.lru_cache(maxsize=self.bound())(self.fn)

    def entries(self) -> int:
        """Entries held now."""
        return int(self.cached.cache_info().currsize)  # type: ignore[attr-defined]


def memo(maxsize: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Memoise a pure function of hashable arguments in at most ``maxsize`` entries
    (fewer while a process cap is set)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        handle = Memo(fn, maxsize)

        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return handle.cached(*args, **kwargs)

        call.memo = handle  # type: ignore[attr-defined]
        with _lock:
            _all.append(handle)
        return call

    return wrap


def set_cap(entries: int | None) -> None:
    """Cap every memo cache in this process, and those made later, at ``entries``
    (0: nothing is memoised; None: each keeps its own bound). Caches start empty."""
    global _cap
    if entries is not None and not 0 <= entries <= MAX_CAP:
        raise ValueError(f"cache_max_entries: {entries} is outside 0..{MAX_CAP}")
    with _lock:
        _cap = entries
        for handle in _all:
            handle.rebuild()


def capped(own: int) -> int:
    """A cache's own bound under the process cap (the unit caches take it too)."""
    return own if _cap is None else min(own, _cap)


def cap() -> int | None:
    """The process cap now (None: none)."""
    return _cap


def handles() -> list[Memo[Any, Any]]:
    """Every memo cache in this process (for diagnostics and tests)."""
    with _lock:
        return list(_all)


def held_entries() -> int:
    """Entries all memo caches hold together now."""
    return sum(h.entries() for h in handles())
