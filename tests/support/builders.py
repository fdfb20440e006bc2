"""Layer builders that are TEST DOUBLES: the extractive builder plus failures or delay.

They run inside Ray actors, so each counts its own calls; tests read the counts
through the actor's stats.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.llm.types import LLMError
from memstrata.model import KeyFact, SessionMeta, Turn, TurnNote


class FlakyBuilder(ExtractiveBuilder):
    """TEST DOUBLE: fails the first ``fail_times`` builds (forever with -1), sleeps ``delay_s``."""

    def __init__(self, fail_times: int = 0, delay_s: float = 0.0) -> None:
        super().__init__()
        self.fail_times = fail_times
        self.delay_s = delay_s
        self.calls = 0

    def _attempt(self) -> None:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_times < 0 or self.calls <= self.fail_times:
            raise LLMError(f"scripted builder failure {self.calls}")

    def key_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[KeyFact]:
        self._attempt()
        return super().key_facts(meta, turns)

    def turn_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[TurnNote]:
        self._attempt()
        return super().turn_notes(meta, turns)
