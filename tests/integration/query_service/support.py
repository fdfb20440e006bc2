"""Helpers for the query-service tests: a loop thread for the servers, and SlowReader.

``SlowReader`` is a TEST DOUBLE: it wraps the real memory and sleeps before
each read, so a test can hold an Answer in flight long enough to cancel it, let
its deadline pass, or fill a tenant's concurrency slots. It counts the reads
it served, which is how the tests see that cancelled work really stopped.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An asyncio loop on its own thread; servers live here for the whole test session."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="grpc-loop",
                                       daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class SlowReader:
    """TEST DOUBLE: the real memory, ``delay_s`` slower per read; counts the reads."""

    READS = ("search", "sessions", "session", "l0", "facts", "notes", "raw")

    def __init__(self, memory: Any, delay_s: float = 0.0) -> None:
        self._memory = memory
        self.delay_s = delay_s
        #: Reads that are not slowed down (a test can keep Search fast).
        self.fast: set[str] = set()
        self.reads = 0
        #: Reads sleeping in their delay right now (tests wait on it, not on the clock).
        self.busy = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._memory, name)
        if name not in self.READS:
            return target

        def slow(*args: Any, **kwargs: Any) -> Any:
            if name not in self.fast:
                with self._lock:
                    self.busy += 1
                try:
                    time.sleep(self.delay_s)
                finally:
                    with self._lock:
                        self.busy -= 1
            with self._lock:
                self.reads += 1
            return target(*args, **kwargs)

        return slow
