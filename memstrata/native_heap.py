"""Pin glibc's mmap threshold in long-running processes (``serve``, ``up``, ``worker``).

glibc serves an allocation at or above its *mmap threshold* from a mapping of
its own, which goes back to the system when freed; anything smaller comes from
an arena, which keeps freed space resident for later. By default the threshold
slides: each time a mapped block is freed, the threshold rises to that block's
size (up to 32 MiB). The embedded stores allocate and free multi-MiB buffers on
every commit (tantivy's document channel and indexing arena, Qdrant Edge's
segment buffers), so after the first few commits those buffers come from the
arenas, interleaved with long-lived small allocations, and the freed space
between them stays resident. Pinning the threshold stops the slide: ``serve``
under the soak bench held about 225 MB less (bench/RESULTS.md, ``bench.allocator``).

The cost is a ``mmap``/``munmap`` pair per large buffer, which the soak's
throughput and Search latency did not show. Where the C library is not glibc
(musl, macOS) nothing is changed.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

#: ``M_MMAP_THRESHOLD`` from glibc's ``<malloc.h>``.
M_MMAP_THRESHOLD = -3
#: glibc refuses a pinned threshold above half its arena heap size (32 MiB on 64-bit).
MAX_KIB = 32 * 1024


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the symbols already loaded into this process
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
        return libc
    except (OSError, AttributeError):
        return None


def pin_mmap_threshold(kib: int) -> bool:
    """Pin glibc's mmap threshold at ``kib`` KiB; False (and nothing changed) for 0,
    outside glibc, or when glibc refuses the value."""
    if kib <= 0:
        return False
    if kib > MAX_KIB:
        raise ValueError(f"malloc_mmap_threshold_kb: {kib} is over glibc's limit of {MAX_KIB}")
    libc = _glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    pinned = mallopt(M_MMAP_THRESHOLD, kib * 1024) == 1
    if not pinned:
        log.warning("glibc refused an mmap threshold of %d KiB; its sliding threshold stays", kib)
    return pinned


def trim() -> bool:
    """Give the free pages of every glibc arena back to the system (``malloc_trim(0)``).

    Worth a call after a large structure owned by other threads is dropped (a
    tantivy writer and its indexing thread, whose arena otherwise keeps the
    space resident); a few milliseconds. False outside glibc or when nothing
    was released.
    """
    libc = _glibc()
    if libc is None:
        return False
    malloc_trim = libc.malloc_trim
    malloc_trim.argtypes = [ctypes.c_size_t]
    malloc_trim.restype = ctypes.c_int
    return malloc_trim(0) == 1
