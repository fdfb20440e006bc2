"""A static token table distilled from the shipped MiniLM (the model2vec idea).

Each WordPiece token is encoded alone (``[CLS] token [SEP]``) by the same
MiniLM graph the default encoder runs, and mean-pooled as a sentence would be.
That raw ``(vocab, 384)`` table costs about 30 s of CPU once; it is cached on
disk under a name made of the model's and tokenizer's hashes, so a changed
model file gets a new table and a stale one is never read.

The recipe on top (cheap, applied at every load, part of ``model_id``):
centre the rows (the common direction every MiniLM output shares would
otherwise dominate a mean; model2vec's PCA does this too, and its rotation
alone changes no cosine, so none is done), and weight each token down by how
common it is (SIF, ``a / (a + p)``, with ``p`` a Zipf estimate from the
token's rank in the vocabulary).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memstrata.embed.static import StaticEmbedder, StaticTable, file_digest
from memstrata.embed.types import EmbedError

DIM = 384
#: Bump when the raw table's computation changes (old cache files are then ignored).
RAW_VERSION = 1
#: The first whole-word row of the BERT uncased vocabulary ("the"); lower ids
#: are [unused] slots, single characters and punctuation.
FIRST_WORD_ID = 1996

Progress = Callable[[int, int], None]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memstrata"


def stderr_progress(what: str) -> Progress:
    """Print ``what: done/total`` to stderr about every 10% (the build takes ~30 s)."""
    state = {"next": 0.0, "t0": time.monotonic()}

    def tick(done: int, total: int) -> None:
        if done >= state["next"] * total or done == total:
            print(f"{what}: {done}/{total} tokens ({time.monotonic() - state['t0']:.0f} s)",
                  file=sys.stderr, flush=True)
            state["next"] = done / total + 0.1
    return tick


def raw_table(model: Path, tokenizer_path: Path, cache_dir: Path,
              progress: Progress | None = None, *, batch: int = 1024,
              threads: int | None = None) -> tuple[np.ndarray, str]:
    """The ``(vocab, 384)`` MiniLM output per token, from the cache or built now.

    Returns the table and its cache key (hashes of the model and tokenizer).
    """
    key = f"minilm-static-v{RAW_VERSION}-{file_digest(model)}-{file_digest(tokenizer_path, 8)}"
    path = cache_dir / f"{key}.npy"
    if path.is_file():
        try:
            table = np.load(path)
            if table.ndim == 2 and table.shape[1] == DIM:
                return table.astype(np.float32, copy=False), key
        except (OSError, ValueError):
            pass  # a torn or foreign file: build it again
    table = build_raw_table(model, tokenizer_path, progress, batch=batch, threads=threads)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".npy.tmp", delete=False) as f:
            np.save(f, table)
        os.replace(f.name, path)
    except OSError as exc:  # read-only home: keep the table in memory only
        print(f"memstrata: cannot cache the static table in {cache_dir}: {exc}",
              file=sys.stderr)
    return table, key


def build_raw_table(model: Path, tokenizer_path: Path, progress: Progress | None = None, *,
                    batch: int = 1024, threads: int | None = None,
                    ids: Sequence[int] | None = None) -> np.ndarray:
    """MiniLM's mean-pooled output for ``[CLS] token [SEP]``, one row per token.

    ``ids`` limits it to some tokens (rows in that order); default: the whole vocabulary.
    """
    from tokenizers import Tokenizer

    from memstrata.embed.minilm import MiniLMEmbedder

    # The table is distilled from the float products (its fingerprint names that recipe).
    encoder = MiniLMEmbedder(model_path=model, tokenizer_path=tokenizer_path, threads=threads,
                             arithmetic="float")
    session = encoder.session("float")
    tok = Tokenizer.from_file(str(tokenizer_path))
    todo = np.asarray(ids if ids is not None else range(tok.get_vocab_size()), dtype=np.int64)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    if cls_id is None or sep_id is None:
        raise EmbedError(f"{tokenizer_path}: no [CLS]/[SEP] tokens (not a BERT WordPiece file)")
    needs_types = any(i.name == "token_type_ids" for i in session.get_inputs())
    out = np.empty((len(todo), DIM), dtype=np.float32)
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        input_ids = np.stack([np.full_like(chunk, cls_id), chunk, np.full_like(chunk, sep_id)], 1)
        feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
        if needs_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        out[start:start + len(chunk)] = session.run(None, feeds)[0].mean(axis=1)
        if progress:
            progress(start + len(chunk), len(todo))
    return out


def zipf_weights(vocab: int, sif: float) -> np.ndarray:
    """SIF weights ``sif / (sif + p)`` with ``p`` a Zipf law over word rank."""
    rank = np.maximum(np.arange(vocab, dtype=np.float64) - FIRST_WORD_ID + 1, 1.0)
    p = (1.0 / rank) / (1.0 / rank).sum()
    return (sif / (sif + p)).astype(np.float32)


def apply_recipe(raw: np.ndarray, *, centre: bool, sif: float | None) -> np.ndarray:
    rows = raw.astype(np.float32, copy=True)
    if centre:
        rows -= rows.mean(axis=0)
    if sif is not None:
        rows *= zipf_weights(rows.shape[0], sif)[:, None]
    return np.ascontiguousarray(rows)


def recipe_id(centre: bool, sif: float | None) -> str:
    return f"c{int(centre)}-sif{sif:g}" if sif is not None else f"c{int(centre)}-sif0"


def minilm_static_embedder(*, model_path: Path | None = None,
                           tokenizer_path: Path | None = None,
                           cache_dir: Path | None = None, centre: bool = True,
                           sif: float | None = 1e-3,
                           progress: Progress | None = None) -> StaticEmbedder:
    """The distilled encoder; its ``model_id`` names the model hash and the recipe."""
    from memstrata.embed.minilm import model_file, tokenizer_file

    model, tok_path = model_file(model_path), tokenizer_file(tokenizer_path)
    cache = cache_dir or default_cache_dir()
    recipe = recipe_id(centre, sif)
    model_id = (f"minilm-static-v{RAW_VERSION}-{file_digest(model)}-"
                f"{file_digest(tok_path, 8)}-{recipe}")

    def load() -> StaticTable:
        from tokenizers import Tokenizer

        raw, _ = raw_table(model, tok_path, cache,
                           progress or stderr_progress("distilling the MiniLM token table"))
        rows = apply_recipe(raw, centre=centre, sif=sif)
        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        empty = rows[tokenizer.token_to_id("[UNK]") or 0].copy()
        empty /= max(float(np.linalg.norm(empty)), 1e-12)
        return StaticTable(rows=rows, tokenizer=tokenizer, model_id=model_id, empty=empty)

    return StaticEmbedder(load, model_id, DIM, name="minilm-static")
