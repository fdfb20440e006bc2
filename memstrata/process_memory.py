"""The process-wide memory settings, applied once by the long-running commands.

``serve``, ``up`` and ``worker`` run for days, so two things that a short script
never notices matter there: glibc's mmap threshold (:mod:`memstrata.native_heap`)
and how many units the process caches keep (:mod:`memstrata.unit_caches`). Both
are process-wide, so they are set here from :class:`~memstrata.config.Settings`
rather than by each ``Memory``.
"""

from __future__ import annotations

from memstrata.config import Settings
from memstrata.native_heap import pin_mmap_threshold
from memstrata.unit_caches import set_bound


def apply(settings: Settings) -> None:
    """Pin the mmap threshold and bound the unit caches as ``settings`` say."""
    pin_mmap_threshold(settings.malloc_mmap_threshold_kb)
    set_bound(settings.unit_cache_entries)
