"""Query vectors remembered per scope, so a repeated question is not encoded again.

The answer controller searches several times per question with overlapping
query lists (the question, then rewrites that often repeat it), and callers
retry. Encoding one short query is about half of a Search's CPU, so a hit
saves that half.

The key is ``(tenant, user, text)`` with the text's whitespace collapsed (the
encoder's tokenizer splits on whitespace, so the vector of the collapsed text
is the vector of the original). A vector is never shared across scopes: one
tenant can neither read another's vectors nor learn from a hit's speed that
another tenant asked the same thing. Bounded LRU; ``size=0`` turns it off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from memstrata.embed.types import Embedder
from memstrata.model import Scope

__all__ = ["QueryVectorCache", "normalize_query"]


def normalize_query(text: str) -> str:
    """The cache's form of a query: surrounding and repeated whitespace removed."""
    return " ".join(text.split())


class QueryVectorCache:
    """LRU of query vectors keyed by scope and normalised text (thread-safe)."""

    def __init__(self, embedder: Embedder, size: int) -> None:
        if size < 0:
            raise ValueError(f"query cache size must be >= 0, got {size}")
        self.embedder = embedder
        self.size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._vectors)

    def embed(self, scope: Scope, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` for ``scope``; the misses encoded in one call."""
        if self.size == 0:
            return self.embedder.embed_queries(texts)
        keys = [(scope.tenant_id, scope.user_id, normalize_query(t)) for t in texts]
        found: dict[tuple[str, str, str], np.ndarray] = {}
        with self._lock:
            for k in keys:
                v = self._vectors.get(k)
                if v is not None:
                    self._vectors.move_to_end(k)
                    found[k] = v
            self.hits += sum(1 for k in keys if k in found)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            fresh = self.embedder.embed_queries([k[2] for k in missing])
            with self._lock:
                self.misses += len(missing)
                for k, v in zip(missing, fresh):
                    v = np.array(v, dtype=np.float32)
                    v.flags.writeable = False  # shared by later callers
                    found[k] = v
                    self._vectors[k] = v
                    self._vectors.move_to_end(k)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        dim = next(iter(found.values())).shape[0] if found else self.embedder.dim
        out = np.empty((len(keys), dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def forget(self, scope: Scope) -> None:
        """Drop every vector of ``scope`` (its user was deleted)."""
        with self._lock:
            for k in [k for k in self._vectors if k[:2] == (scope.tenant_id, scope.user_id)]:
                del self._vectors[k]
