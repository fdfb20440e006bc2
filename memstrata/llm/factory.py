"""Pick the layer builder named by ``MEMSTRATA_LLM_BACKEND``."""

from __future__ import annotations

from memstrata.config import Settings
from memstrata.llm.types import LayerBuilder, LLMError
from memstrata.llm.usage import UsageMeter


def open_builder(settings: Settings, meter: UsageMeter | None = None) -> LayerBuilder:
    """``extractive`` (offline default, needs no model) or ``openai``.

    Both are imported only when chosen, so the offline install never needs
    the ``openai`` package.
    """
    if settings.llm_backend == "extractive":
        from memstrata.llm.extractive import ExtractiveBuilder

        builder: LayerBuilder = ExtractiveBuilder(
            max_words=settings.l0_max_summary_words,
            max_input_chars=settings.l1_max_input_chars)
        return builder
    if settings.llm_backend == "openai":
        try:
            from memstrata.llm.openai_compat import OpenAIBuilder
        except ImportError as exc:
            if (exc.name or "").split(".")[0] != "openai":
                raise
            raise LLMError("MEMSTRATA_LLM_BACKEND=openai needs the openai package: "
                           "pip install 'memstrata[openai]'") from exc
        return OpenAIBuilder(settings, meter)
    raise LLMError(f"MEMSTRATA_LLM_BACKEND: unknown backend {settings.llm_backend!r}")
