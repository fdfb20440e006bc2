"""Waiting on a condition, not on the clock: poll until it holds, fail clearly at a deadline.

Integration tests wait for something (a worker stored a turn, a file appeared,
a process exited): a fixed ``sleep`` is either too short on a loaded machine or
wastes time on an idle one. The deadline only catches a hang, so make it generous.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout_s: float, what: str, step_s: float = 0.05) -> T:
    """Call ``check()`` until it returns something truthy, and return that.

    AssertionError naming ``what`` (and the last value seen) after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout_s:g} s (last: {got!r})")
        time.sleep(step_s)


async def wait_for_async(check: Callable[[], Awaitable[T]], timeout_s: float, what: str,
                         step_s: float = 0.05) -> T:
    """:func:`wait_for` for a coroutine check, on the running loop."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = await check()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout_s:g} s (last: {got!r})")
        await asyncio.sleep(step_s)
