"""An LLM builder that falls back to the extractive one instead of failing.

A slow, dead or confused model must not stop an ingest or a stream worker:
when the LLM build of a window (or of a session's L1/L2) fails, or comes back
unusable, the extractive builder builds it from the text instead. What it
builds is marked (``fallback`` = the failure reason on each L0 summary, on the
:class:`~memstrata.llm.types.Built` of L1/L2) and counted on the usage meter
(``memstrata_llm_fallbacks_total{role="builder",reason=...}``), so that the
memory can build it again with the LLM later (see ``Memory._prepare`` and
:class:`~memstrata.layers.lazy.LazyLayers`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from memstrata.llm.types import Built, LayerBuilder, LLMError, TurnSummary, Window
from memstrata.llm.usage import UsageMeter
from memstrata.model import KeyFact, SessionMeta, Turn, TurnNote

log = logging.getLogger(__name__)

T = TypeVar("T")


class FallbackBuilder(LayerBuilder):
    """``primary`` (the LLM) first; ``fallback`` (extractive) when it fails.

    ``version`` is the primary's: the index fingerprint and the L1/L2 cache
    key do not change when the fallback steps in, the marks do.
    """

    def __init__(self, primary: LayerBuilder, fallback: LayerBuilder,
                 meter: UsageMeter | None = None) -> None:
        self.primary = primary
        self.fallback = fallback
        self.meter = meter if meter is not None else UsageMeter()
        self.name = primary.name

    @property
    def version(self) -> str:
        return self.primary.version

    def _failed(self, what: str, exc: Exception) -> str:
        reason = exc.reason if isinstance(exc, LLMError) else "error"
        self.meter.record_fallback("builder", reason)
        if isinstance(exc, LLMError):
            log.warning("LLM build of %s failed (%s); built it extractively: %s",
                        what, reason, exc)
        else:  # a bug or a shape the parser did not expect: keep the traceback
            log.warning("LLM build of %s failed; built it extractively", what, exc_info=exc)
        return reason

    def summarize_window(self, window: Window) -> list[TurnSummary]:
        what = f"session {window.meta.session_id} turns {window.targets}"
        try:
            built = self.primary.summarize_window(window)
        except Exception as exc:  # noqa: BLE001 - every failure falls back, none stops an ingest
            reason = self._failed(what, exc)
            return [s.model_copy(update={"fallback": reason})
                    for s in self.fallback.summarize_window(window)]
        gaps = {s.turn_index: s.fallback for s in built if s.fallback}
        if not gaps:
            return built
        # The model left turns out: the extractive builder fills them in, marked.
        for _ in gaps:
            self.meter.record_fallback("builder", "incomplete")
        log.warning("LLM build of %s left out turns %s; built them extractively", what,
                    sorted(gaps))
        extract = {s.turn_index: s for s in self.fallback.summarize_window(window)}
        return [extract[s.turn_index].model_copy(update={"fallback": gaps[s.turn_index]})
                if s.turn_index in gaps and s.turn_index in extract else s for s in built]

    def _layer(self, what: str, primary: Callable[[], list[T]],
               fallback: Callable[[], list[T]]) -> Built[T]:
        try:
            return Built(primary())
        except Exception as exc:  # noqa: BLE001 - a read falls back instead of failing
            return Built(fallback(), self._failed(what, exc))

    def key_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[KeyFact]:
        return self.build_facts(meta, turns).items

    def turn_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[TurnNote]:
        return self.build_notes(meta, turns).items

    def build_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> Built[KeyFact]:
        return self._layer(f"L1 of session {meta.session_id}",
                           lambda: self.primary.key_facts(meta, turns),
                           lambda: self.fallback.key_facts(meta, turns))

    def build_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> Built[TurnNote]:
        return self._layer(f"L2 of session {meta.session_id}",
                           lambda: self.primary.turn_notes(meta, turns),
                           lambda: self.fallback.turn_notes(meta, turns))
