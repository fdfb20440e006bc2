"""The Memory facade end to end on the embedded default stack.

Real parts throughout: extractive builder, MiniLM ONNX encoder, Qdrant Edge,
tantivy and SQLite under a temporary data directory.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory, SessionNotFound
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.retrieval.hybrid import QueryError
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
OTHER_MAYA = Scope(tenant_id="globex", user_id="maya")


def open_memory(data_dir: Path, embedder: MiniLMEmbedder) -> Memory:
    settings = Settings(data_dir=data_dir)
    return Memory(settings, ExtractiveBuilder(), embedder, open_vector_store(settings, embedder.dim),
                  open_lexical_store(settings), open_doc_store(settings))


@pytest.fixture
def memory(tmp_path: Path, embedder: MiniLMEmbedder):
    m = open_memory(tmp_path, embedder)
    m.ingest(read_file(SAMPLE).sessions)
    yield m
    m.close()


def test_search_finds_the_right_session(memory: Memory):
    hits = memory.search(MAYA, "Which restaurant did my sister like in Lisbon?")
    assert hits[0].session_id in {"2024-05-20-after-trip", "2024-03-02-trip"}
    assert hits[0].units and hits[0].units[0].scope == MAYA
    run = memory.search(MAYA, ["half marathon training", "knee pain after running"], top_k=1)
    assert [h.session_id for h in run] == ["2024-04-10-running"]


def test_tenants_never_see_each_other(memory: Memory):
    # Same user id in two tenants: each sees only its own sessions.
    acme = {h.session_id for h in memory.search(MAYA, "bees honey hives farmers market")}
    globex = {h.session_id for h in memory.search(OTHER_MAYA, "Lisbon trip sister seafood")}
    assert "2024-02-01-notes" not in acme
    assert globex == {"2024-02-01-notes"}
    assert [m.session_id for m in memory.sessions(OTHER_MAYA)] == ["2024-02-01-notes"]
    with pytest.raises(SessionNotFound):
        memory.raw(OTHER_MAYA, "2024-03-02-trip")


def test_reingest_adds_nothing(memory: Memory):
    before = (memory.vectors.count(), memory.lexical.count(), memory.docs.count_turns())
    report = memory.ingest(read_file(SAMPLE).sessions)
    assert report.sessions == 0 and report.unchanged == 5
    assert (memory.vectors.count(), memory.lexical.count(), memory.docs.count_turns()) == before


def test_changed_session_is_replaced_not_duplicated(memory: Memory):
    meta = memory.session(MAYA, "2024-04-10-running")
    shorter = Session(meta=meta, turns=[Turn(index=1, messages=[
        Message(role="user", content="I switched to cycling, no more running.")])])
    report = memory.ingest([shorter])
    assert report.sessions == 1
    assert len(memory.l0(MAYA, "2024-04-10-running")) == 1
    assert memory.vectors.count(MAYA) == memory.lexical.count(MAYA) == len(
        [u for s in memory.sessions(MAYA) for u in memory.l0(MAYA, s.session_id)])


def test_l1_l2_are_lazy_cached_and_rebuilt_when_the_session_changes(memory: Memory):
    assert memory.layers.builds == 0  # nothing built at ingestion
    facts = memory.facts(MAYA, "2024-03-02-trip")
    assert any("Lisbon" in f.text for f in facts.facts)
    assert all(f.turn_indices for f in facts.facts)  # every bullet traceable
    memory.facts(MAYA, "2024-03-02-trip")
    notes = memory.notes(MAYA, "2024-03-02-trip")
    assert [n.turn_index for n in notes.notes] == [1, 2, 3]
    assert memory.layers.builds == 2  # one L1, one L2: the second L1 read was a hit
    meta = memory.session(MAYA, "2024-03-02-trip")
    grown = memory.raw(MAYA, "2024-03-02-trip") + [Turn(index=4, messages=[
        Message(role="user", content="We booked the Sintra day trip for 12 May.")])]
    memory.ingest([Session(meta=meta, turns=grown)])
    facts = memory.facts(MAYA, "2024-03-02-trip")
    assert memory.layers.builds == 3
    assert any("Sintra" in f.text for f in facts.facts)


def test_data_survives_reopening(tmp_path: Path, embedder: MiniLMEmbedder):
    m = open_memory(tmp_path, embedder)
    m.ingest(read_file(SAMPLE).sessions)
    m.close()
    m = open_memory(tmp_path, embedder)
    try:
        assert "2024-01-05-job" not in {h.session_id for h in m.search(MAYA, "robotics")}
        assert m.search(Scope(tenant_id="acme", user_id="leo"), "robotics startup Munich")[
            0].session_id == "2024-01-05-job"
    finally:
        m.close()


def test_oversized_requests_are_refused_with_the_field(memory: Memory):
    with pytest.raises(QueryError, match=r"queries\[0\]: 2001 characters, limit is 2000"):
        memory.search(MAYA, "x" * 2001)
    with pytest.raises(QueryError, match="queries: 9 given, limit is 8"):
        memory.search(MAYA, ["a"] * 9)
    with pytest.raises(QueryError, match="top_k"):
        memory.search(MAYA, "a", top_k=0)


def test_unknown_session_is_a_clear_error(memory: Memory):
    with pytest.raises(SessionNotFound, match="nope"):
        memory.facts(MAYA, "nope")


def test_empty_scope_returns_nothing(memory: Memory):
    assert memory.search(Scope(tenant_id="acme", user_id="nobody"), "Lisbon") == []


def test_session_meta_round_trip(memory: Memory):
    meta = memory.session(MAYA, "2024-03-02-trip")
    assert isinstance(meta, SessionMeta) and meta.session_date.year == 2024


def test_fusion_weights_follow_how_much_of_the_query_bm25_covers(
        memory: Memory, monkeypatch: pytest.MonkeyPatch):
    """A question whose words BM25's best hit holds keeps BM25's full share; one it
    does not gets less, and the dense side takes the rest. By default the fully
    covered one skips the dense side and is ranked by BM25 alone."""
    p = memory.retriever.params
    misses = memory.retriever.query_vectors.misses
    alone = memory.retriever.rank(MAYA, ["Berlin half marathon"])
    assert alone.weights[0] == {"lexical": 1.0, "dense": 0.0, "sessions": pytest.approx(
        alone.weights[0]["sessions"])}
    assert memory.retriever.query_vectors.misses == misses  # not encoded
    monkeypatch.setattr(memory.retriever, "params", replace(p, dense_skip_coverage=None))
    covered = memory.retriever.rank(MAYA, ["Berlin half marathon"])
    assert covered.weights[0]["lexical"] == pytest.approx(1 - p.dense_weight)
    assert [s for s, _ in covered.sessions[:1]] == [s for s, _ in alone.sessions[:1]]
    vague = memory.retriever.rank(MAYA, ["half marathon zzyzx qwertyuiop"])
    assert vague.weights[0]["lexical"] < covered.weights[0]["lexical"]
    assert vague.weights[0]["lexical"] + vague.weights[0]["dense"] == pytest.approx(1.0)


def test_rrf_fusion_and_fixed_weights_remain_available(tmp_path: Path, embedder: MiniLMEmbedder):
    settings = Settings(data_dir=tmp_path, fusion="rrf", dense_weight=0.5,
                        coverage_weighting=False)
    m = Memory(settings, ExtractiveBuilder(), embedder,
               open_vector_store(settings, embedder.dim), open_lexical_store(settings),
               open_doc_store(settings))
    try:
        m.ingest(read_file(SAMPLE).sessions)
        r = m.retriever.rank(MAYA, ["half marathon zzyzx qwertyuiop"])
        assert r.weights == [{"lexical": 0.5, "dense": 0.5, "sessions": 0.0}]
        # RRF scores are sums of w / (60 + rank): at most 2 * 0.5 / 61 before the boost.
        best_unit = max(r.unit_scores.values())
        assert best_unit <= 1 / 61 + 1e-12
        assert r.sessions[0][0] == "2024-04-10-running"
    finally:
        m.close()


def test_retrieval_and_store_knobs_come_from_settings(tmp_path: Path, embedder: MiniLMEmbedder):
    import json

    settings = Settings(data_dir=tmp_path, max_top_k=3, top_k_sessions=2, units_per_hit=1,
                        qdrant_edge_hnsw_m=8, qdrant_edge_search_threads=1,
                        tantivy_heap_bytes=20_000_000)
    m = Memory(settings, ExtractiveBuilder(), embedder,
               open_vector_store(settings, embedder.dim), open_lexical_store(settings),
               open_doc_store(settings))
    try:
        m.ingest(read_file(SAMPLE).sessions)
        with pytest.raises(QueryError,
                           match=r"top_k: must be between 1 and 3, got 4 \(MEMSTRATA_MAX_TOP_K\)"):
            m.search(MAYA, "Lisbon", top_k=4)
        assert all(len(h.units) <= 1 for h in m.search(MAYA, "Lisbon trip sister seafood"))
    finally:
        m.close()
    config = json.loads((settings.vector_dir / "edge_config.json").read_text())
    assert config["hnsw_config"]["m"] == 8
    assert config["max_search_threads"] == 1


def test_whole_sessions_get_their_own_bm25_document(tmp_path: Path, embedder: MiniLMEmbedder):
    """One session-level document per session: written on ingest, used by the
    retriever when BM25 covers the query, and gone with the session."""
    settings = Settings(data_dir=tmp_path)
    m = Memory(settings, ExtractiveBuilder(), embedder,
               open_vector_store(settings, embedder.dim), open_lexical_store(settings),
               open_doc_store(settings),
               session_lexical=open_lexical_store(settings, sessions=True))
    try:
        sessions = read_file(SAMPLE).sessions
        m.ingest(sessions)
        assert m.session_lexical is not None
        assert m.session_lexical.count(MAYA) == sum(1 for s in sessions if s.scope == MAYA)
        # Words from two different turns of one session meet in its document.
        whole = m.session_lexical.search(MAYA, "vegetarian Sintra", 5)
        assert whole[0].session_id == "2024-03-02-trip"
        covered = m.retriever.rank(MAYA, ["Berlin half marathon"])
        assert covered.weights[0]["sessions"] == pytest.approx(m.retriever.params
                                                               .session_lexical_weight)
        vague = m.retriever.rank(MAYA, ["zzyzx qwertyuiop"])
        assert vague.weights[0]["sessions"] == 0.0
        # A question naming the day of a session lifts that session.
        dated = m.retriever.rank(MAYA, ["What did we talk about on 2 March 2024?"])
        assert dated.sessions[0][0] == "2024-03-02-trip"
        receipt = m.delete(MAYA, "2024-03-02-trip")
        assert receipt.complete and receipt.removed["session_lexical"] == 1
        assert m.session_lexical.count(MAYA) == 2
        assert m.ingest(sessions).sessions == 1  # the deleted one comes back, document too
        assert m.session_lexical.count(MAYA) == 3
    finally:
        m.close()


def test_a_data_dir_without_the_session_index_still_opens_read_only(tmp_path: Path):
    import shutil

    settings = Settings(data_dir=tmp_path)
    with Memory.open(settings) as m:
        m.ingest(read_file(SAMPLE).sessions)
        assert m.session_lexical is not None
    shutil.rmtree(settings.session_lexical_dir)  # as written before the index existed
    with Memory.open(settings, read_only=True) as m:
        assert m.session_lexical is None
        assert m.search(MAYA, "Lisbon trip sister seafood")


def test_search_is_the_same_with_and_without_the_query_cache(memory: Memory,
                                                             monkeypatch: pytest.MonkeyPatch):
    # The same retriever settings, one with cached query vectors (twice: miss, then hit).
    # Every query encoded (none skips the dense side), so every one meets the cache.
    monkeypatch.setattr(memory.retriever, "params",
                        replace(memory.retriever.params, dense_skip_coverage=None))
    questions = ["Which restaurant did my sister like in Lisbon?",
                 "knee pain after running", "bees honey hives farmers market"]
    cold = [memory.search(MAYA, q) for q in questions]
    memory.retriever.query_vectors.size = 0
    try:
        uncached = [memory.search(MAYA, q) for q in questions]
    finally:
        memory.retriever.query_vectors.size = 4096
    warm = [memory.search(MAYA, q) for q in questions]
    assert memory.retriever.query_vectors.hits >= len(questions)
    for a, b, c in zip(cold, uncached, warm):
        assert [(h.session_id, [u.id for u in h.units]) for h in a] == \
               [(h.session_id, [u.id for u in h.units]) for h in b] == \
               [(h.session_id, [u.id for u in h.units]) for h in c]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
    # Deleting the user drops its cached query vectors too.
    assert len(memory.retriever.query_vectors) > 0
    memory.delete(MAYA)
    assert len(memory.retriever.query_vectors) == 0
