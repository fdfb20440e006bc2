"""Custom Prometheus collectors registered once per served registry.

``memstrata serve`` hosts the stream worker, and the service's registry also
serves the worker's; a collector reading process-wide state (the caches, a
``Memory``'s redaction counts) must then appear on only one of them, or a scrape
reports its series twice and Prometheus rejects it. Both the service and the
worker call :func:`register_once` with what the collector reads as ``key``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

C = TypeVar("C")  # a prometheus_client Collector (not imported: the core runs without it)

#: Registries holding a collector, by what it reads (kept while the key lives).
_holders: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def register_once(key: Any, registry: Any, make: Callable[[], C],
                  included: Iterable[Any] = ()) -> C | None:
    """Register ``make()`` on ``registry`` unless a collector for ``key`` is already on
    it or on one of ``included`` (registries it serves too); None when skipped.

    ``key`` must be weak-referenceable (an object the collector reads, or a
    module-level sentinel for process-wide state).
    """
    holders = _holders.setdefault(key, [])
    if any(registry is h for h in holders) or any(r is h for r in included for h in holders):
        return None
    collector = make()
    registry.register(collector)
    holders.append(registry)
    return collector
