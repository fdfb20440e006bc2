"""The static token-table encoders (memstrata.embed.static, memstrata.embed.distill)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from memstrata.config import Settings
from memstrata.embed import distill
from memstrata.embed.factory import open_embedder
from memstrata.embed.minilm import MiniLMEmbedder, model_file, tokenizer_file
from memstrata.embed.static import WORDLLAMA_DIM, StaticEmbedder
from memstrata.memory import IndexMismatch, Memory

TEXTS = ["I adopted a puppy", "we got a new dog", "the stock market fell", "",
         "Melanie painted a sunrise over the lake " * 80]


@pytest.fixture(scope="module")
def wordllama(tmp_path_factory: pytest.TempPathFactory,
              monkeypatch_module: pytest.MonkeyPatch) -> StaticEmbedder:
    """Loaded once, with no network and an empty home: the wheel's files only."""

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the static encoder tried to open a connection")

    monkeypatch_module.setattr(socket.socket, "connect", no_network)
    monkeypatch_module.setattr(socket, "create_connection", no_network)
    monkeypatch_module.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch_module.setenv("HF_HUB_OFFLINE", "1")
    emb = open_embedder(Settings(data_dir=tmp_path_factory.mktemp("d"),
                                 embed_backend="wordllama"))
    assert isinstance(emb, StaticEmbedder)
    emb.embed_documents(["load now"])
    return emb


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_wordllama_loads_offline_without_importing_the_package(wordllama: StaticEmbedder):
    assert "wordllama" not in sys.modules  # its import sets up root logging; never run it


def test_shapes_norms_determinism(wordllama: StaticEmbedder):
    vecs = wordllama.embed_documents(TEXTS)
    assert vecs.shape == (len(TEXTS), WORDLLAMA_DIM) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vecs, wordllama.embed_documents(TEXTS))
    # One at a time gives the same rows as a batch (no padding, no batch effects).
    alone = np.stack([wordllama.embed_query(t) for t in TEXTS])
    np.testing.assert_allclose(alone, vecs, atol=1e-6)
    assert wordllama.embed_documents([]).shape == (0, WORDLLAMA_DIM)
    puppy, dog, market = vecs[:3]
    assert float(puppy @ dog) > float(puppy @ market)


def test_another_encoder_is_refused_on_an_existing_data_dir(tmp_path: Path):
    with Memory.open(Settings(data_dir=tmp_path)):
        pass  # indexed by MiniLM (the encoder never has to load for this)
    for backend in ("wordllama", "minilm-static"):
        with pytest.raises(IndexMismatch, match=f"embedder: 'minilm:.*' -> '{backend}:"):
            Memory.open(Settings(data_dir=tmp_path, embed_backend=backend))  # type: ignore[arg-type]


def test_distilled_rows_are_minilm_on_each_token_alone():
    ids = [2000, 3899, 7592]  # "to", "dog", "hello"
    rows = distill.build_raw_table(model_file(), tokenizer_file(), ids=ids)
    # The table is distilled from the float products, whatever the default arithmetic.
    floats = MiniLMEmbedder(arithmetic="float", threads=1)
    floats.embed_documents(["x"])  # loads the tokenizer
    words = [floats._tokenizer.id_to_token(i) for i in ids]
    want = floats.embed_documents(words)  # "[CLS] word [SEP]", mean-pooled, unit length
    got = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=2e-3)


def test_distilled_table_is_cached_by_model_hash(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch):
    builds: list[Path] = []

    def counting_build(model: Path, tok: Path, progress=None, **kw) -> np.ndarray:
        builds.append(model)
        if progress:
            progress(10, 10)
        # A short table keeps the test fast (token ids past its end are clipped).
        return np.random.default_rng(len(builds)).normal(size=(2500, distill.DIM)).astype(
            np.float32)

    monkeypatch.setattr(distill, "build_raw_table", counting_build)
    model_a = tmp_path / "a.onnx"
    model_a.write_bytes(b"model a")
    first, key_a = distill.raw_table(model_a, tokenizer_file(), tmp_path / "cache")
    again, _ = distill.raw_table(model_a, tokenizer_file(), tmp_path / "cache")
    np.testing.assert_array_equal(first, again)
    assert len(builds) == 1
    model_b = tmp_path / "b.onnx"
    model_b.write_bytes(b"model b")
    _, key_b = distill.raw_table(model_b, tokenizer_file(), tmp_path / "cache")
    assert len(builds) == 2 and key_a != key_b

    emb = distill.minilm_static_embedder(model_path=model_a, cache_dir=tmp_path / "cache")
    assert key_a in emb.model_id
    vecs = emb.embed_documents(TEXTS)
    assert len(builds) == 2  # read from the cache
    assert vecs.shape == (len(TEXTS), distill.DIM)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
