"""Test double: wraps a real encoder and counts the texts it is asked to embed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstrata.embed.types import Embedder


class CountingEmbedder(Embedder):
    """Delegates to ``inner``; ``texts`` and ``calls`` count document encodings."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.texts = 0
        self.calls = 0

    @property
    def model_id(self) -> str | None:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)
