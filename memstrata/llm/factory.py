"""Pick the layer builder named by ``MEMSTRATA_LLM_BACKEND``."""

from __future__ import annotations

from memstrata.config import Settings
from memstrata.llm.fallback import FallbackBuilder
from memstrata.llm.types import LayerBuilder, LLMError
from memstrata.llm.usage import UsageMeter


def open_builder(settings: Settings, meter: UsageMeter | None = None) -> LayerBuilder:
    """``extractive`` (offline default, needs no model) or ``openai``.

    The ``openai`` builder is imported only when chosen, so the offline install
    never needs the ``openai`` package; it is wrapped in a
    :class:`~memstrata.llm.fallback.FallbackBuilder` so a failing model never
    fails a write.
    """
    from memstrata.llm.extractive import ExtractiveBuilder

    extractive = ExtractiveBuilder(max_words=settings.l0_max_summary_words,
                                   max_input_chars=settings.l1_max_input_chars)
    if settings.llm_backend == "extractive":
        return extractive
    if settings.llm_backend == "openai":
        try:
            from memstrata.llm.openai_compat import OpenAIBuilder
        except ImportError as exc:
            if (exc.name or "").split(".")[0] != "openai":
                raise
            raise LLMError("MEMSTRATA_LLM_BACKEND=openai needs the openai package: "
                           "pip install 'memstrata[openai]'") from exc
        meter = meter if meter is not None else UsageMeter()
        # A failed LLM build falls back to the extractive one, marked and counted.
        return FallbackBuilder(OpenAIBuilder(settings, meter), extractive, meter)
    raise LLMError(f"MEMSTRATA_LLM_BACKEND: unknown backend {settings.llm_backend!r}")
