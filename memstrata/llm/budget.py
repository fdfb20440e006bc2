"""One answer's time budget, and what its reads built: shared with every LLM call it makes.

An answer is many LLM calls (controller steps, the L1/L2 builds of the sessions
it reads, notes, answer), each with its own timeout and retries, and each
failing soft; nothing bounded their sum. The controller opens an
:class:`AnswerBudget` around the whole answer (:func:`within`) and every
:class:`~memstrata.llm.openai_compat.ChatClient` call made inside it, the
builder's included, reads it from a context variable (no call site passes
it):

- each attempt's timeout is clipped to what is left, no retry starts past the
  deadline, and a call made once the deadline has passed fails at once
  (reason ``budget``), so the offline fallback answers in time;
- a circuit (endpoint and model) that timed out ``skip_after`` times in this
  answer is skipped for the rest of it (reason ``unavailable``): a server
  that cannot keep up is not waited on again by the next step.

The same object collects the builder calls and the L1/L2 reads the answer
caused, so the trace books their tokens (construction) and shows cache hits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

#: Where a layer read was served from: the L1/L2 cache, this process's memo of layers
#: it could not store, or a build.
LayerSource = Literal["cache", "memo", "built"]


@dataclass(frozen=True)
class BuilderCall:
    """One builder LLM call made inside the answer (a lazy L1/L2 build)."""

    model: str
    prompt_tokens: int
    completion_tokens: int
    ms: float


@dataclass(frozen=True)
class LayerRead:
    """One L1/L2 read made inside the answer, and where it came from."""

    session_id: str
    layer: str
    source: LayerSource
    fallback: str | None = None

    @property
    def cached(self) -> bool:
        return self.source != "built"


class AnswerBudget:
    """The deadline of one answer, its per-answer circuit breaker and its build ledger.

    ``seconds`` None: no deadline (the ledger and the breaker still work).
    """

    def __init__(self, seconds: float | None, *, skip_after: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if skip_after < 1:
            raise ValueError(f"skip_after must be at least 1, got {skip_after}")
        self._clock = clock
        self.seconds = seconds
        self.deadline = clock() + seconds if seconds is not None else None
        self.skip_after = skip_after
        self._lock = threading.Lock()
        self._timeouts: dict[str, int] = {}
        self._builds: list[BuilderCall] = []
        self._reads: list[LayerRead] = []

    # -- time ------------------------------------------------------------------------
    def remaining(self) -> float | None:
        """Seconds left (never below 0), or None without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self._clock())

    @property
    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0.0

    def clip(self, timeout_s: float) -> float:
        """``timeout_s``, or what is left of the budget when that is less."""
        left = self.remaining()
        return timeout_s if left is None else min(timeout_s, left)

    # -- the per-answer circuit breaker -----------------------------------------------
    def refusal(self, circuit: str) -> tuple[str, str] | None:
        """(reason, why) when a call on ``circuit`` must not be made now; else None."""
        if self.expired:
            return "budget", f"the answer's time budget ({self.seconds:g} s) is spent"
        with self._lock:
            n = self._timeouts.get(circuit, 0)
        if n >= self.skip_after:
            return "unavailable", (f"it timed out {n} time(s) earlier in this answer, so it "
                                   f"is skipped for the rest of it")
        return None

    def timed_out(self, circuit: str) -> None:
        with self._lock:
            self._timeouts[circuit] = self._timeouts.get(circuit, 0) + 1

    # -- the ledger ----------------------------------------------------------------------
    def book_builder(self, model: str, prompt_tokens: int, completion_tokens: int,
                     ms: float) -> None:
        with self._lock:
            self._builds.append(BuilderCall(model, prompt_tokens, completion_tokens, ms))

    def layer_read(self, session_id: str, layer: str, source: LayerSource,
                   fallback: str | None = None) -> None:
        with self._lock:
            self._reads.append(LayerRead(session_id, layer, source, fallback))

    def take(self) -> tuple[list[BuilderCall], list[LayerRead]]:
        """The builder calls and layer reads booked since the last take (then forgotten)."""
        with self._lock:
            builds, reads = self._builds, self._reads
            self._builds, self._reads = [], []
        return builds, reads


_CURRENT: ContextVar[AnswerBudget | None] = ContextVar("memstrata_answer_budget", default=None)


def current() -> AnswerBudget | None:
    """The budget of the answer being worked on in this context, if any."""
    return _CURRENT.get()


@contextmanager
def within(budget: AnswerBudget) -> Iterator[AnswerBudget]:
    """Make ``budget`` the current one for the calls made inside the block."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)
