"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint.

For deployments that already run an embedding model behind a gateway (or use
OpenAI's). Uses the same retry policy as the chat client and normalises the
vectors itself, since not every server returns unit vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import openai

from memstrata.config import Settings
from memstrata.embed.types import Embedder, EmbedError
from memstrata.llm.retry import call_with_retries, describe_error


class OpenAIEmbedder(Embedder):
    """Vectors of ``MEMSTRATA_EMBED_MODEL`` from ``embed_base_url`` (or ``llm_base_url``).

    ``MEMSTRATA_EMBED_DIM``, when set, is sent as ``dimensions`` (honoured by
    OpenAI's text-embedding-3 models) and every vector is checked against it;
    when unset the length of the first vector returned is adopted, and
    :attr:`dim` asks the server once if it is read before any call.
    """

    name = "openai"

    def __init__(
        self,
        settings: Settings,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        secret = settings.embed_api_key or settings.llm_api_key
        self._client = openai.OpenAI(
            base_url=settings.embed_base_url or settings.llm_base_url,
            api_key=secret.get_secret_value() if secret else "unused",
            timeout=settings.llm_timeout_s,
            max_retries=0,
        )
        self._model = settings.embed_model
        self._requested_dim = settings.embed_dim
        self._dim = settings.embed_dim
        self._batch_size = settings.embed_batch_size
        self._retry: dict[str, Any] = {"retries": settings.llm_max_retries,
                                       "base_s": backoff_base_s, "max_s": backoff_max_s}
        if sleep is not None:
            self._retry["sleep"] = sleep
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``MEMSTRATA_EMBED_MODEL``: another model writes another index."""
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed_documents(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        batches = [self._embed_batch(list(texts[i:i + self._batch_size]))
                   for i in range(0, len(texts), self._batch_size)]
        return np.concatenate(batches, axis=0)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        extra: dict[str, Any] = {}
        if self._requested_dim is not None:
            extra["dimensions"] = self._requested_dim
        # The OpenAI API rejects empty strings outright.
        inputs = [t if t.strip() else " " for t in texts]

        def call() -> Any:
            return self._client.embeddings.create(
                model=self._model, input=inputs, encoding_format="float", **extra)

        try:
            response = call_with_retries(call, **self._retry)
        except openai.OpenAIError as exc:
            raise EmbedError(f"embedding model {self._model!r} failed: "
                             f"{describe_error(exc)}") from exc
        rows = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise EmbedError(f"embedding model {self._model!r} returned {len(rows)} vectors "
                             f"for {len(texts)} texts")
        vectors = np.asarray([r.embedding for r in rows], dtype=np.float32)
        self._check_dim(vectors.shape[1])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: np.ndarray = vectors / np.clip(norms, 1e-12, None)
        return unit

    def _check_dim(self, got: int) -> None:
        with self._lock:
            if self._dim is None:
                self._dim = got
        if got != self._dim:
            setting = " (MEMSTRATA_EMBED_DIM)" if self._requested_dim else ""
            raise EmbedError(f"embedding model {self._model!r} returned {got}-dimensional "
                             f"vectors; expected {self._dim}{setting}")
