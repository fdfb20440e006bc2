"""Pick the encoder named by ``MEMSTRATA_EMBED_BACKEND``."""

from __future__ import annotations

from memstrata.config import Settings
from memstrata.embed.types import Embedder, EmbedError


def open_embedder(settings: Settings) -> Embedder:
    """``minilm`` (offline default) or ``openai``; the latter is imported only when chosen."""
    if settings.embed_backend == "minilm":
        from memstrata.embed.minilm import MiniLMEmbedder

        return MiniLMEmbedder(settings)
    if settings.embed_backend == "openai":
        try:
            from memstrata.embed.openai_embed import OpenAIEmbedder
        except ImportError as exc:
            if (exc.name or "").split(".")[0] != "openai":
                raise
            raise EmbedError("MEMSTRATA_EMBED_BACKEND=openai needs the openai package: "
                             "pip install 'memstrata[openai]'") from exc
        return OpenAIEmbedder(settings)
    raise EmbedError(f"MEMSTRATA_EMBED_BACKEND: unknown backend {settings.embed_backend!r}")
