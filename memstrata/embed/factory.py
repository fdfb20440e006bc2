"""Pick the encoder named by ``MEMSTRATA_EMBED_BACKEND``."""

from __future__ import annotations

from memstrata.config import Settings
from memstrata.embed.types import Embedder, EmbedError


def open_embedder(settings: Settings) -> Embedder:
    """``minilm`` (offline default), ``wordllama`` or ``minilm-static`` (static
    token tables, offline), or ``openai``; each is imported only when chosen."""
    if settings.embed_backend == "minilm":
        from memstrata.embed.minilm import MiniLMEmbedder

        return MiniLMEmbedder(settings)
    if settings.embed_backend == "wordllama":
        from memstrata.embed.static import wordllama_embedder

        return wordllama_embedder()
    if settings.embed_backend == "minilm-static":
        from memstrata.embed.distill import minilm_static_embedder

        return minilm_static_embedder(model_path=settings.embed_model_path,
                                      tokenizer_path=settings.embed_tokenizer_path,
                                      cache_dir=settings.embed_static_cache_dir)
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
