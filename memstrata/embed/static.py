"""Static sentence encoders: a text's vector is the weighted mean of its tokens' rows.

No network pass per text, so encoding costs a tokenizer call and a table
lookup (tens of microseconds instead of milliseconds). Two tables:

* ``wordllama``: the 256-dimensional ``l2_supercat`` table and its Llama-2 BPE
  tokenizer that the ``wordllama`` wheel ships. They are read directly with
  ``safetensors`` and ``tokenizers``; the package itself is never imported (its
  import configures the root logger and its loader can fall back to a download).
* ``minilm-static``: distilled once from the shipped MiniLM (the model2vec
  recipe): every WordPiece token is run through MiniLM alone and mean-pooled,
  then centred, rotated by PCA and weighted by a Zipf estimate of how common
  it is (:mod:`memstrata.embed.distill`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memstrata.embed.types import Embedder, EmbedError

WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256
_WORDLLAMA_WEIGHTS = Path("weights", f"{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}.safetensors")
_WORDLLAMA_TOKENIZER = Path("tokenizers", f"{WORDLLAMA_CONFIG}_tokenizer_config.json")


@dataclass(frozen=True)
class StaticTable:
    """Everything a static encoder needs, loaded."""

    #: ``(vocab, dim)`` float32 rows, already multiplied by the token weights.
    rows: np.ndarray
    tokenizer: Any
    #: What the vectors depend on (file hashes, recipe): part of the index fingerprint.
    model_id: str
    #: The row an empty text gets (any fixed unit vector keeps the contract).
    empty: np.ndarray


class StaticEmbedder(Embedder):
    """Normalised mean of the token rows of a :class:`StaticTable`.

    The table loads on first use under a lock (building an app costs nothing).
    Special tokens are not added: a static row of ``[CLS]`` carries no meaning.
    """

    name = "static"

    def __init__(self, load: Callable[[], StaticTable], model_id: str, dim: int,
                 *, name: str = "static") -> None:
        self._load_table = load
        self._model_id = model_id
        self.name = name
        self._dim = dim
        self._lock = threading.Lock()
        self._table: StaticTable | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def table(self) -> StaticTable:
        if self._table is None:
            with self._lock:
                if self._table is None:
                    table = self._load_table()
                    if table.rows.shape[1] != self._dim:
                        raise EmbedError(f"static table has {table.rows.shape[1]} columns, "
                                         f"expected {self._dim}")
                    self._table = table
        return self._table

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        t = self.table()
        encodings = t.tokenizer.encode_batch([str(x) for x in texts], add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64,
                              count=len(encodings))
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        filled = lengths > 0
        if filled.any():
            ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64,
                              count=int(lengths.sum()))
            np.clip(ids, 0, t.rows.shape[0] - 1, out=ids)
            starts = np.concatenate(([0], np.cumsum(lengths[filled])[:-1]))
            out[filled] = np.add.reduceat(t.rows[ids], starts, axis=0)
        out[~filled] = t.empty
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.clip(norms, 1e-12, None)
        return out


# -- wordllama ----------------------------------------------------------------

def _package_dir(package: str) -> Path | None:
    """Where an installed package lives, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def wordllama_files() -> tuple[Path, Path]:
    """The weights and tokenizer inside the installed ``wordllama`` wheel."""
    base = _package_dir("wordllama")
    if base is None:
        raise EmbedError("MEMSTRATA_EMBED_BACKEND=wordllama needs the wordllama package: "
                         "pip install wordllama")
    weights, tokenizer = base / _WORDLLAMA_WEIGHTS, base / _WORDLLAMA_TOKENIZER
    for path in (weights, tokenizer):
        if not path.is_file():
            raise EmbedError(f"the wordllama package has no {path.name} (expected {path}); "
                             f"install a version that ships it: pip install wordllama==0.4.0.post1")
    return weights, tokenizer


def file_digest(path: Path, size: int = 12) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:size]


def load_wordllama() -> StaticTable:
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    weights, tok_file = wordllama_files()
    try:
        rows = load_file(str(weights))["embedding.weight"].astype(np.float32)
        tokenizer = Tokenizer.from_file(str(tok_file))
    except Exception as exc:
        raise EmbedError(f"cannot load the wordllama table from {weights}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    empty = rows[tokenizer.token_to_id("</s>") or 0].copy()
    empty /= max(float(np.linalg.norm(empty)), 1e-12)
    return StaticTable(rows=np.ascontiguousarray(rows), tokenizer=tokenizer,
                       model_id=f"wordllama-{WORDLLAMA_CONFIG}-{WORDLLAMA_DIM}", empty=empty)


def wordllama_embedder() -> StaticEmbedder:
    return StaticEmbedder(load_wordllama, f"wordllama-{WORDLLAMA_CONFIG}-{WORDLLAMA_DIM}",
                          WORDLLAMA_DIM, name="wordllama")
