"""glibc's mmap threshold, pinned: a large block is mapped (and returned) even after a larger
one was freed, which under glibc's sliding threshold it is not."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memstrata.config import Settings
from memstrata.native_heap import MAX_KIB, _glibc, pin_mmap_threshold

pytestmark = pytest.mark.skipif(_glibc() is None, reason="needs glibc (mallopt)")

#: In a fresh process: free an 8 MiB block (glibc then slides its threshold to 8 MiB), and
#: report whether a 2 MiB block is then a mapping of its own (IS_MMAPPED, bit 2 of the
#: chunk's size word just before the pointer).
_PROBE = """
import ctypes, sys
from memstrata.native_heap import pin_mmap_threshold
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
pinned = pin_mmap_threshold(int(sys.argv[1]))
libc.free(libc.malloc(8 << 20))
p = libc.malloc(2 << 20)
mapped = bool(ctypes.c_size_t.from_address(p - 8).value & 2)
libc.free(p)
print(pinned, mapped)
"""


def _probe(kib: int) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(kib)], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    return out[0], out[1]


def test_a_pinned_threshold_keeps_large_blocks_mapped_after_a_larger_one_is_freed() -> None:
    assert _probe(128) == ("True", "True")


def test_glibcs_sliding_threshold_puts_them_in_the_arena() -> None:
    # the baseline the pin changes: 0 leaves glibc's default, which slid to 8 MiB
    assert _probe(0) == ("False", "False")


def test_zero_changes_nothing_and_over_glibcs_limit_is_refused() -> None:
    assert pin_mmap_threshold(0) is False
    with pytest.raises(ValueError, match="malloc_mmap_threshold_kb"):
        pin_mmap_threshold(MAX_KIB + 1)


def test_the_setting_is_bounded_by_glibcs_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_MALLOC_MMAP_THRESHOLD_KB", str(MAX_KIB + 1))
    with pytest.raises(ValueError, match="malloc_mmap_threshold_kb"):
        Settings()
    assert Settings.model_fields["malloc_mmap_threshold_kb"].default == 128


#: In a fresh process: 40 MB of 1 KB blocks from the arena, all freed but the last (which
#: keeps glibc from trimming the top on its own); RssAnon in KB after the frees and after
#: ``trim``.
_TRIM_PROBE = """
import ctypes
from memstrata.native_heap import trim
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
blocks = [libc.malloc(1024) for _ in range(40_000)]
for p in blocks:
    ctypes.memset(p, 1, 1024)
for p in blocks[:-1]:
    libc.free(p)
before = anon()
released = trim()
print(before, anon(), released)
"""


def test_trim_gives_freed_arena_pages_back() -> None:
    out = subprocess.run([sys.executable, "-c", _TRIM_PROBE], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    before, after, released = int(out[0]), int(out[1]), out[2]
    assert released == "True"
    assert before - after > 20_000, (before, after)  # most of the 40 MB went back
