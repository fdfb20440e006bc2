"""A query that BM25's best hit fully covers is ranked by BM25 alone (``dense_skip_coverage``).

Such a query is not encoded and the vector store is not asked; a query that
BM25 covers only in part, or one with no content words, still is. The stores
and the encoder are test doubles that record what they were asked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from memstrata.embed.types import Embedder
from memstrata.model import L0Unit, Scope
from memstrata.retrieval.hybrid import HybridRetriever, RetrievalParams
from memstrata.store.types import Hit
from tests.unit.test_retrieval_arrays import ReplayDocs, ReplayLexical

SCOPE = Scope(tenant_id="t", user_id="u")
UNITS = {
    "u1": L0Unit(id="u1", scope=SCOPE, session_id="s1", turn_index=1,
                 summary="She will run the Berlin marathon with her sister"),
    "u2": L0Unit(id="u2", scope=SCOPE, session_id="s2", turn_index=1,
                 summary="Booked a yoga retreat"),
    "u3": L0Unit(id="u3", scope=SCOPE, session_id="s3", turn_index=1,
                 summary="Hiking plans in the Alps"),
}
COVERED = "When did she run the Berlin marathon?"
PARTLY = "Which yoga retreat in the mountains?"
NO_CONTENT = "When was that?"
LEXICAL = {COVERED: [Hit("u1", "s1", 9.0), Hit("u2", "s2", 1.0)],
           PARTLY: [Hit("u2", "s2", 7.0)],
           NO_CONTENT: [Hit("u3", "s3", 0.5)]}


class RecordingEmbedder(Embedder):
    """Test double: records every text it encodes; vectors are arbitrary unit vectors."""

    name = "recording-double"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    @property
    def dim(self) -> int:
        return 2

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))


class RecordingVectors:
    """Test double: counts searches and returns one fixed dense list."""

    def __init__(self) -> None:
        self.calls = 0

    def search(self, scope: Scope, vector: np.ndarray, limit: int,
               session_ids: Collection[str] | None = None, *,
               sessions: bool = True) -> list[Hit]:
        self.calls += 1
        return [Hit("u3", "" if not sessions else "s3", 0.9)]


def retriever(threshold: float | None) -> tuple[HybridRetriever, RecordingEmbedder,
                                                RecordingVectors]:
    embedder, vectors = RecordingEmbedder(), RecordingVectors()
    params = RetrievalParams(query_cache_size=0, session_lexical_weight=0.0,
                             dense_skip_coverage=threshold)
    r = HybridRetriever(embedder, vectors, ReplayLexical(LEXICAL),  # type: ignore[arg-type]
                        ReplayDocs(UNITS, {}), params)  # type: ignore[arg-type]
    return r, embedder, vectors


def test_a_fully_covered_query_is_neither_encoded_nor_searched_by_vector():
    r, embedder, vectors = retriever(1.0)
    ranking = r.rank(SCOPE, [COVERED])
    assert embedder.encoded == [] and vectors.calls == 0
    assert ranking.weights[0]["lexical"] == 1.0 and ranking.weights[0]["dense"] == 0.0
    assert ranking.sessions[0][0] == "s1"
    assert "s3" not in dict(ranking.sessions)  # only the dense side named it


def test_a_partly_covered_query_keeps_the_dense_side():
    r, embedder, vectors = retriever(1.0)
    ranking = r.rank(SCOPE, [PARTLY])
    assert embedder.encoded == [PARTLY] and vectors.calls == 1
    assert "s3" in dict(ranking.sessions)


def test_only_the_uncovered_queries_of_several_are_encoded_in_one_call():
    r, embedder, vectors = retriever(1.0)
    r.rank(SCOPE, [COVERED, PARTLY, NO_CONTENT])
    assert embedder.encoded == [PARTLY, NO_CONTENT]
    assert vectors.calls == 2


def test_a_lower_threshold_skips_partly_covered_queries_too():
    r, embedder, _ = retriever(0.5)
    r.rank(SCOPE, [PARTLY])
    assert embedder.encoded == []


def test_without_the_setting_every_query_is_encoded():
    r, embedder, vectors = retriever(None)
    ranking = r.rank(SCOPE, [COVERED])
    assert embedder.encoded == [COVERED] and vectors.calls == 1
    assert ranking.weights[0]["dense"] > 0.0
    assert "s3" in dict(ranking.sessions)


def test_the_setting_reaches_the_retriever():
    from memstrata.config import Settings

    assert RetrievalParams.from_settings(Settings()).dense_skip_coverage == 1.0
    assert RetrievalParams.from_settings(
        Settings(dense_skip_coverage=0.8)).dense_skip_coverage == 0.8
    assert RetrievalParams.from_settings(Settings(dense_skip=False)).dense_skip_coverage is None
