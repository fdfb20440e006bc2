"""The sentence-encoder interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class EmbedError(RuntimeError):
    """The encoder could not be loaded or failed on a batch."""


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors (so dot product = cosine)."""

    name: str = "embedder"

    @property
    def model_id(self) -> str | None:
        """The model the vectors come from, when the encoder names one (None: ``name`` says
        all). Part of the index fingerprint: vectors of two models never share an index."""
        return None

    @property
    @abstractmethod
    def dim(self) -> int:
        """Vector length."""

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), dim)``; encodes in batches internally."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Like :meth:`embed_documents`; models with task prefixes override this."""
        return self.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]
