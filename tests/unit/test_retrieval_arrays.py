"""The retriever's fusion over arrays ranks exactly as the dict rules of :mod:`fusion` did.

``reference_rank`` is the retriever's scoring before it moved to numpy
(memstrata bf4c00e, ``HybridRetriever._rank``), written over the dict rules of
:mod:`memstrata.retrieval.fusion`. Hypothesis draws searches of the shape the
stores return (BM25 and cosine lists with ties and overlaps, units missing
from the doc store, whole-session lists, keyword phrases, dated sessions and
questions naming dates, several queries at once) and both must give the same
sessions, units and scores, bit for bit, and the same weights, under both
fusion modes. The stores are test doubles that replay the drawn lists.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.embed.types import Embedder
from memstrata.model import L0Unit, Message, Scope, Turn
from memstrata.retrieval import arrays, dates, fusion, indexing
from memstrata.retrieval.hybrid import HybridRetriever, Ranking, RetrievalParams
from memstrata.retrieval.sessions import session_text
from memstrata.store.types import Hit
from memstrata.text.terms import content_stems, stems

SCOPE = Scope(tenant_id="t", user_id="u")
WORDS = ["berlin", "marathon", "support", "group", "painting", "yoga", "dog", "camping",
         "sister", "adoption", "guitar", "pottery", "first", "home", "trip", "may", "race"]
DATES = [None, datetime(2023, 5, 8), datetime(2023, 6, 1), datetime(2022, 10, 20),
         datetime(2023, 5, 30)]
PERIODS = ["", " in May 2023", " on 1 June, 2023", " in October", " during 2022"]


# -- the retriever before numpy (bf4c00e), over the dict rules -------------------------

def reference_rank(r: HybridRetriever, scope: Scope, qs: list[str],
                   session_ids: Collection[str] | None = None) -> Ranking:
    p = r.params
    qvecs = r.query_vectors.embed(scope, qs)
    hits = []
    unit_session: dict[str, str] = {}
    use_sessions = r.session_lexical is not None and p.session_lexical_weight > 0
    for q, qv in zip(qs, qvecs):
        lex = r.lexical.search(scope, q, p.candidate_units, session_ids)
        dense = r.vectors.search(scope, qv, p.candidate_units, session_ids)
        whole = (r.session_lexical.search(scope, q, p.session_candidates, session_ids)
                 if use_sessions and r.session_lexical is not None else [])
        for h in (*lex, *dense):
            unit_session[h.unit_id] = h.session_id
        hits.append((lex, dense, whole))
    units = {u.id: u for u in r.docs.get_units(scope, list(unit_session))}
    # Since the vector store stopped returning sessions, a dense hit's session is
    # its unit's (the same where the stores agree); a unit that only dense hits
    # name and the doc store lacks is placed in no session.
    lex_session = {h.unit_id: h.session_id for lex, _, _ in hits for h in lex}
    for uid in list(unit_session):
        if uid in units and uid not in lex_session:
            unit_session[uid] = units[uid].session_id
        elif uid not in units and uid not in lex_session:
            del unit_session[uid]
    unit_keywords = {uid: indexing.lexical_keywords(u) for uid, u in units.items()}
    unit_phrases = {uid: fusion.phrases(tuple(kws)) for uid, kws in unit_keywords.items()}
    session_dates = {u.session_id: u.session_date for u in units.values()
                     if u.session_date is not None}
    unit_best: dict[str, float] = {}
    boosted = []
    weights_used = []
    for q, (lex, dense, whole) in zip(qs, hits):
        wanted = content_stems(q)
        top = units.get(lex[0].unit_id) if lex else None
        held = stems(" ".join([top.summary, *unit_keywords.get(top.id, ())])) if top else ()
        cov = fusion.coverage(wanted, held)
        weights = (fusion.coverage_weights(p.dense_weight, cov) if p.coverage_weighting
                   else p.weights)
        if p.fusion == "rrf":
            unit_scores = fusion.rrf(
                {"lexical": [h.unit_id for h in lex], "dense": [h.unit_id for h in dense]},
                k=p.rrf_k, weights=weights)
        else:
            unit_scores = fusion.weighted_sum(
                {"lexical": fusion.dbsf([(h.unit_id, h.score) for h in lex]),
                 "dense": fusion.dbsf([(h.unit_id, h.score) for h in dense])}, weights)
        for u, sc in unit_scores.items():
            if sc > unit_best.get(u, float("-inf")):
                unit_best[u] = sc
        sessions, members = fusion.best_per_session(unit_scores, unit_session)
        qt = fusion.tokens(q)
        matches = {sid: fusion.phrase_matches(qt, (unit_phrases.get(uid, ()) for uid in uids))
                   for sid, uids in members.items()}
        scores = fusion.keyword_boost(sessions, matches, p.keyword_alpha, p.keyword_max_matches)
        w_sessions = 0.0
        if whole and p.session_lexical_weight != 0.0:
            if cov >= p.session_min_unit_coverage:
                w_sessions = p.session_lexical_weight
            else:
                turns = r.docs.get_turns(scope, whole[0].session_id)
                if (fusion.coverage(wanted, stems(session_text(turns)))
                        >= p.session_min_session_coverage):
                    w_sessions = p.session_lexical_weight
        if w_sessions > 0.0:
            scores = fusion.blend_sessions(
                scores, fusion.dbsf([(h.session_id, h.score) for h in whole]), w_sessions)
        periods = dates.named_periods(q) if p.date_boost > 0 else []
        if periods:
            fitting = {sid for sid, d in session_dates.items()
                       if dates.fits_any(periods, d.date())}
            scores = fusion.date_boost(scores, fitting, p.date_boost)
        weights_used.append({**weights, "sessions": w_sessions})
        boosted.append(scores)
    final = fusion.max_fuse(boosted)
    ranked_units = sorted((units[u] for u in unit_best if u in units),
                          key=lambda u: (-unit_best[u.id], u.session_id, u.turn_index))
    return Ranking(sessions=fusion.top_k(final, len(final)), units=ranked_units,
                   unit_scores=unit_best, weights=weights_used)


# -- test doubles that replay drawn store answers -------------------------------------

class QueryIndexEmbedder(Embedder):
    """Test double: a query's vector carries its position in the drawn query list."""

    name = "query-index-double"

    def __init__(self, queries: Sequence[str]) -> None:
        self.queries = list(queries)

    @property
    def dim(self) -> int:
        return 2

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[float(self.queries.index(t)), 1.0] for t in texts], dtype=np.float32)


class ReplayLexical:
    """Test double: the drawn hit list of each query text."""

    def __init__(self, lists: dict[str, list[Hit]]) -> None:
        self.lists = lists

    def search(self, scope: Scope, query: str, limit: int,
               session_ids: Collection[str] | None = None) -> list[Hit]:
        return self.lists.get(query, [])[:limit]


class ReplayVectors:
    """Test double: the drawn dense list of the query whose index the vector carries."""

    def __init__(self, lists: list[list[Hit]]) -> None:
        self.lists = lists

    def search(self, scope: Scope, vector: np.ndarray, limit: int,
               session_ids: Collection[str] | None = None, *,
               sessions: bool = True) -> list[Hit]:
        hits = self.lists[int(vector[0])][:limit]
        return hits if sessions else [h._replace(session_id="") for h in hits]


class ReplayDocs:
    """Test double: drawn units (some hit ids have none) and each session's turns."""

    def __init__(self, units: dict[str, L0Unit], turns: dict[str, list[Turn]]) -> None:
        self.units, self.turns = units, turns

    def get_units(self, scope: Scope, unit_ids: Collection[str]) -> list[L0Unit]:
        return [self.units[i] for i in dict.fromkeys(unit_ids) if i in self.units]

    def get_turns(self, scope: Scope, session_id: str,
                  indices: Collection[int] | None = None) -> list[Turn]:
        return self.turns.get(session_id, [])


# -- drawn searches --------------------------------------------------------------------

phrase = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
score_lex = st.one_of(st.floats(0.0, 30.0, allow_nan=False), st.sampled_from([5.0, 12.5]))
score_cos = st.one_of(st.floats(-0.2, 1.0, allow_nan=False), st.sampled_from([0.5, 0.75]))


@st.composite
def searches(draw: st.DrawFn) -> tuple[list[str], RetrievalParams, HybridRetriever]:
    n_sessions = draw(st.integers(1, 8))
    sessions = [f"s{i}" for i in range(n_sessions)]
    session_date = {s: draw(st.sampled_from(DATES)) for s in sessions}
    n_units = draw(st.integers(1, 30))
    unit_ids = [f"u{i}" for i in range(n_units)]
    unit_of = {u: draw(st.sampled_from(sessions)) for u in unit_ids}
    units = {}
    for u in unit_ids:
        if draw(st.integers(0, 9)) == 0:
            continue  # a hit whose unit the doc store does not hold
        sid = unit_of[u]
        units[u] = L0Unit(id=u, scope=SCOPE, session_id=sid, session_date=session_date[sid],
                          turn_index=draw(st.integers(1, 4)),
                          summary=draw(phrase), keywords=draw(st.lists(phrase, max_size=4)))
    turns = {s: [Turn(index=1, messages=[Message(role="user", content=draw(phrase))])]
             for s in sessions}
    n_queries = draw(st.integers(1, 3))
    queries = list(dict.fromkeys(
        draw(phrase) + draw(st.sampled_from(PERIODS)) + f" q{i}" for i in range(n_queries)))

    def hit_list(score: st.SearchStrategy[float], ids: list[str], size: int) -> list[Hit]:
        chosen = draw(st.lists(st.sampled_from(ids), max_size=size))
        scored = sorted(((draw(score), u) for u in chosen), key=lambda x: -x[0])
        return [Hit(u, unit_of.get(u, u), s) for s, u in scored]

    lex = {q: hit_list(score_lex, unit_ids, 12) for q in queries}
    dense = [hit_list(score_cos, unit_ids, 12) for _ in queries]
    whole = {q: [Hit(f"doc-{s}", s, sc) for sc, s in sorted(
        ((draw(score_lex), s) for s in draw(st.lists(st.sampled_from(sessions), max_size=6,
                                                      unique=True))), key=lambda x: -x[0])]
        for q in queries}
    params = RetrievalParams(
        fusion=draw(st.sampled_from(["dbsf", "rrf"])),
        coverage_weighting=draw(st.booleans()),
        keyword_max_matches=draw(st.sampled_from([1, 3])),
        session_lexical_weight=draw(st.sampled_from([0.0, 0.7])),
        session_min_unit_coverage=draw(st.sampled_from([0.0, 0.6, 1.0])),
        session_min_session_coverage=draw(st.sampled_from([0.0, 0.8])),
        date_boost=draw(st.sampled_from([0.0, 0.5])),
        query_cache_size=0,
        dense_skip_coverage=None)  # the reference encodes every query
    retriever = HybridRetriever(QueryIndexEmbedder(queries), ReplayVectors(dense),  # type: ignore[arg-type]
                                ReplayLexical(lex), ReplayDocs(units, turns),  # type: ignore[arg-type]
                                params, session_lexical=ReplayLexical(whole))  # type: ignore[arg-type]
    return queries, params, retriever


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches())
def test_array_fusion_ranks_exactly_as_the_dict_rules(drawn):
    queries, _, retriever = drawn
    want = reference_rank(retriever, SCOPE, queries)
    got = retriever.rank(SCOPE, queries)
    assert got.sessions == want.sessions
    assert [u.id for u in got.units] == [u.id for u in want.units]
    assert list(got.unit_scores.items()) == list(want.unit_scores.items())
    assert got.weights == want.weights


def test_keyword_phrase_matches_as_query_runs():
    """A phrase matches the query iff it is a run of its tokens (what the n-gram set holds)."""
    qt = fusion.tokens("Did she join the LGBTQ support group in May?")
    grams = arrays.query_grams(qt, 3)
    for kw in ["support group", "group support", "lgbtq support group", "may", "she join"]:
        (p,) = fusion.phrases((kw,))
        assert (p in grams) == bool(fusion.keyword_matches(qt, [kw])), kw


def test_unit_facts_follow_the_unit_object():
    facts = arrays.UnitFacts(size=2)
    a = L0Unit(id="a", scope=SCOPE, session_id="s", turn_index=1, summary="x",
               keywords=["support group"])
    b = a.model_copy(update={"keywords": ["yoga"]})
    assert facts(a).phrases == {" support group "}
    assert facts(b).phrases == {" yoga "}  # same id, another object: its own facts
    for i in range(3):  # bounded: the oldest goes first
        facts(a.model_copy(update={"id": f"c{i}"}))
    assert len(facts) == 2
