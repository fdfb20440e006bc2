"""The trace of one answer: every step, and what the whole thing cost.

Each tool call and each LLM call becomes a :class:`~memstrata.model.TraceStep`
(tool, arguments, sessions touched, layer reached, tokens, milliseconds). The
:class:`TraceSummary` condenses them into the numbers APDMem reports per
question: deepest layer, sessions drilled and their share of the haystack,
steps, LLM calls, tokens per role and cost in USD. Memory text read by the
tools is counted in tokens too, estimated at four characters a token and
labelled as such, because the offline mode has no tokenizer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from memstrata.contract import RoleTokens, TraceSummary
from memstrata.llm.usage import PriceTable
from memstrata.model import Layer, TraceStep

__all__ = ["MEMORY_ROLE", "LLMCall", "RoleTokens", "Trace", "TraceSummary"]

#: The pseudo-role under which memory text read by the tools is counted.
MEMORY_ROLE = "memory"


@dataclass(frozen=True, slots=True)
class LLMCall:
    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    ms: float


@dataclass
class Trace:
    """Collects steps and timings while one question is answered."""

    steps: list[TraceStep] = field(default_factory=list)
    llm_calls: list[LLMCall] = field(default_factory=list)
    ms_llm: float = 0.0
    ms_memory: float = 0.0
    cpu_ms_memory: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    cpu_started: float = field(default_factory=time.thread_time)
    finished: float | None = None
    cpu_finished: float | None = None
    #: Called with each step as it is recorded (the query service streams them, and
    #: stops a cancelled answer by raising here).
    on_step: Callable[[TraceStep], None] | None = None

    def add(self, step: int, tool: str, *, arguments: dict[str, Any] | None = None,
            sessions: list[str] | None = None, layer: Layer | None = None,
            tokens_in: int = 0, tokens_out: int = 0, ms: float = 0.0,
            note: str | None = None) -> TraceStep:
        entry = TraceStep(step=step, tool=tool, arguments=dict(arguments or {}),
                          sessions=list(sessions or []), layer=layer, tokens_in=tokens_in,
                          tokens_out=tokens_out, ms=round(ms, 3), note=note)
        self.steps.append(entry)
        if self.on_step is not None:
            self.on_step(entry)
        return entry

    def llm(self, step: int, role: str, model: str, prompt_tokens: int, completion_tokens: int,
            ms: float, note: str | None = None) -> TraceStep:
        """Book one LLM call (its time is LLM time, not controller overhead)."""
        self.llm_calls.append(LLMCall(role, model, prompt_tokens, completion_tokens, ms))
        self.ms_llm += ms
        return self.add(step, f"llm:{role}", arguments={"model": model},
                        tokens_in=prompt_tokens, tokens_out=completion_tokens, ms=ms, note=note)

    @contextmanager
    def memory_time(self) -> Iterator[None]:
        """Time spent inside Memory reads and searches."""
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.ms_memory += (time.perf_counter() - t0) * 1000
            self.cpu_ms_memory += (time.thread_time() - c0) * 1000

    def finish(self) -> None:
        self.finished = time.perf_counter()
        self.cpu_finished = time.thread_time()

    @property
    def cpu_ms_total(self) -> float:
        end = self.cpu_finished if self.cpu_finished is not None else time.thread_time()
        return (end - self.cpu_started) * 1000

    @property
    def ms_total(self) -> float:
        end = self.finished if self.finished is not None else time.perf_counter()
        return (end - self.started) * 1000

    def tokens_by_role(self) -> dict[str, RoleTokens]:
        out: dict[str, RoleTokens] = {}
        for c in self.llm_calls:
            r = out.setdefault(c.role, RoleTokens())
            r.calls += 1
            r.tokens_in += c.prompt_tokens
            r.tokens_out += c.completion_tokens
        read = [s for s in self.steps if not s.tool.startswith("llm:") and s.tokens_out]
        if read:
            out[MEMORY_ROLE] = RoleTokens(calls=len(read), tokens_in=0,
                                          tokens_out=sum(s.tokens_out for s in read),
                                          estimated=True)
        return out

    def cost(self, prices: PriceTable) -> tuple[float, list[str]]:
        """USD for the LLM calls, and the models the table has no price for."""
        total = 0.0
        missing: list[str] = []
        for c in self.llm_calls:
            price = prices.price_for(c.model)
            if price is None:
                if c.model not in missing and (c.prompt_tokens or c.completion_tokens):
                    missing.append(c.model)
                continue
            total += price.cost(c.prompt_tokens, c.completion_tokens)
        return total, missing
