"""The hybrid L0 retriever (APDMem Appendix G, with a measured change to fusion).

For each query: BM25 over L0 summaries and keywords, dense cosine over L0
embeddings, the two unit lists fused, a session scored by its best unit, plus
a boost for exact keyword-field matches. Several queries fuse by each
session's best score. Every store call is confined to one scope.

How the two lists fuse is a setting (``MEMSTRATA_FUSION``):

* ``dbsf`` (default): each list's scores normalised by their own spread
  (:func:`~memstrata.retrieval.fusion.dbsf`) and added with weights;
* ``rrf``: Reciprocal Rank Fusion with k = 60, as in the appendix.

With ``coverage_weighting`` on (default) the weights are set per query from
how much of the question BM25's best hit holds: a question whose words the
best lexical hit mostly lacks ("How many countries have I visited?" against a
unit about Kyoto) is left to the dense side. ``MEMSTRATA_FUSION=rrf
MEMSTRATA_DENSE_WEIGHT=0.5 MEMSTRATA_COVERAGE_WEIGHTING=false`` is the
appendix's retriever when the three additions below are off too.

Three additions, all measured with ``memstrata eval retrieval`` (the README and
``bench/README.md`` have the numbers):

* **Session-level BM25** (``MEMSTRATA_SESSION_LEXICAL_WEIGHT``, default 0.7): a
  second BM25 index holds each whole session as one document
  (:mod:`~memstrata.retrieval.sessions`); its normalised ranking is blended
  into the session scores, so a session that holds the question's words
  across several turns rises. It applies only when the lexical side is
  trustworthy for the query: BM25's best L0 hit covers at least
  ``session_min_unit_coverage`` of the query's content words, or the best
  session document covers ``session_min_session_coverage`` of them.
* **Date boost** (``MEMSTRATA_DATE_BOOST``, default 0.5): a question that names
  a calendar period ("in October 2023") lifts the candidate sessions dated in
  or just after it (:mod:`~memstrata.retrieval.dates`).
* **No dense side for covered queries** (``MEMSTRATA_DENSE_SKIP``, default on):
  a query whose best BM25 hit holds every content word
  (``MEMSTRATA_DENSE_SKIP_COVERAGE``, 1.0) is ranked by BM25 alone. Encoding
  the query is about half of a Search's CPU, and at full coverage the dense
  list moves few rankings (its 0.3 share of the unit score is then mostly
  outweighed by the whole-session BM25); BM25 runs first to decide.

The rules are those of :mod:`~memstrata.retrieval.fusion`; a search applies
them over numpy arrays of its candidates (:mod:`~memstrata.retrieval.arrays`),
with the same arithmetic, so rankings are identical and cost less Python.

The appendix's retriever exactly: ``MEMSTRATA_FUSION=rrf MEMSTRATA_DENSE_WEIGHT=0.5
MEMSTRATA_COVERAGE_WEIGHTING=false MEMSTRATA_SESSION_LEXICAL_WEIGHT=0
MEMSTRATA_DATE_BOOST=0 MEMSTRATA_DENSE_SKIP=false``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from memstrata.config import Settings
from memstrata.contract import QueryError
from memstrata.embed.query_cache import QueryVectorCache
from memstrata.embed.types import Embedder
from memstrata.limits import TopKRefused, check_top_k
from memstrata.model import L0Unit, Scope, SessionHit
from memstrata.profiles.book import ProfileBook
from memstrata.profiles.graph import load_graph, named_entities
from memstrata.retrieval import arrays, dates, fusion
from memstrata.retrieval.graph_expand import (
    MATCH_BOOST,
    BulletVectors,
    Expansion,
    expand,
    match_bullets,
)
from memstrata.route_plan import RoutePlan
from memstrata.retrieval.sessions import session_text
from memstrata.store.types import DocStore, Hit, LexicalStore, VectorStore
from memstrata.text.terms import content_stems, stems


def _default(name: str) -> Any:
    """The documented default of ``Settings.<name>``: declared there once, read here."""
    return Settings.model_fields[name].default


#: RetrievalParams field -> the Settings field it is read from (same name unless listed).
SETTING_OF: dict[str, str] = {"top_k": "top_k_sessions"}


@dataclass(frozen=True, slots=True)
class RetrievalParams:
    """The retriever's knobs; every default is the :class:`Settings` field's (one declaration)."""

    fusion: Literal["dbsf", "rrf"] = _default("fusion")
    rrf_k: int = _default("rrf_k")
    #: The dense side's share when BM25's best hit covers the whole query.
    dense_weight: float = _default("dense_weight")
    coverage_weighting: bool = _default("coverage_weighting")
    keyword_alpha: float = _default("keyword_alpha")
    keyword_max_matches: int = _default("keyword_max_matches")
    top_k: int = _default("top_k_sessions")
    max_top_k: int = _default("max_top_k")
    units_per_hit: int = _default("units_per_hit")
    candidate_units: int = _default("candidate_units")
    session_lexical_weight: float = _default("session_lexical_weight")
    session_min_unit_coverage: float = _default("session_min_unit_coverage")
    session_min_session_coverage: float = _default("session_min_session_coverage")
    session_candidates: int = _default("session_candidates")
    date_boost: float = _default("date_boost")
    max_query_chars: int = _default("max_query_chars")
    max_queries: int = _default("max_queries")
    query_cache_size: int = _default("query_cache_size")
    #: A query whose best BM25 hit covers at least this share of its content words is
    #: ranked by BM25 alone: not encoded, no vector search (None: never, as
    #: ``MEMSTRATA_DENSE_SKIP=false`` gives).
    dense_skip_coverage: float | None = (_default("dense_skip_coverage")
                                         if _default("dense_skip") else None)
    #: A session the relation graph reaches gains this share of the best session score,
    #: times its expansion weight squared (only when a route plan expands; see route_plan).
    #: Not a setting: only a route plan turns expansion on.
    graph_boost: float = 0.5

    @classmethod
    def from_settings(cls, s: Settings) -> "RetrievalParams":
        return cls(
            fusion=s.fusion,
            rrf_k=s.rrf_k,
            coverage_weighting=s.coverage_weighting,
            dense_weight=s.dense_weight,
            keyword_alpha=s.keyword_alpha,
            keyword_max_matches=s.keyword_max_matches,
            top_k=s.top_k_sessions,
            max_top_k=s.max_top_k,
            units_per_hit=s.units_per_hit,
            candidate_units=s.candidate_units,
            session_lexical_weight=s.session_lexical_weight,
            session_min_unit_coverage=s.session_min_unit_coverage,
            session_min_session_coverage=s.session_min_session_coverage,
            session_candidates=s.session_candidates,
            date_boost=s.date_boost,
            max_query_chars=s.max_query_chars,
            max_queries=s.max_queries,
            query_cache_size=s.query_cache_size,
            dense_skip_coverage=s.dense_skip_coverage if s.dense_skip else None,
        )

    @property
    def weights(self) -> dict[str, float]:
        return {"lexical": 1.0 - self.dense_weight, "dense": self.dense_weight}


class HybridRetriever:
    """Ranks one user's sessions for a set of queries."""

    def __init__(
        self,
        embedder: Embedder,
        vectors: VectorStore,
        lexical: LexicalStore,
        docs: DocStore,
        params: RetrievalParams | None = None,
        session_lexical: LexicalStore | None = None,
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.docs = docs
        self.params = params or RetrievalParams()
        #: BM25 over whole sessions (:mod:`memstrata.retrieval.sessions`); None: not used.
        self.session_lexical = session_lexical
        #: Query vectors by scope and text (size 0: every query encoded).
        self.query_vectors = QueryVectorCache(embedder, self.params.query_cache_size)
        #: What each candidate unit brings besides its scores, derived once per unit.
        self.facts = arrays.UnitFacts()
        #: Profile bullets' vectors, for route plans that match (encoded once each).
        self.bullet_vectors = BulletVectors(embedder.embed_documents)

    def validate(self, queries: Sequence[str], top_k: int | None) -> list[str]:
        """Reject requests over the limits, naming the field (never truncate silently)."""
        p = self.params
        if not queries:
            raise QueryError("queries: at least one query is required")
        if len(queries) > p.max_queries:
            raise QueryError(f"queries: {len(queries)} given, limit is {p.max_queries}")
        for i, q in enumerate(queries):
            if len(q) > p.max_query_chars:
                raise QueryError(
                    f"queries[{i}]: {len(q)} characters, limit is {p.max_query_chars}"
                )
        if top_k is not None:
            try:
                check_top_k(top_k, self.params.max_top_k, "MEMSTRATA_MAX_TOP_K")
            except TopKRefused as exc:
                raise QueryError(str(exc)) from None
        cleaned = [q.strip() for q in queries if q.strip()]
        if not cleaned:
            raise QueryError("queries: all queries are empty")
        return cleaned

    def rank(
        self,
        scope: Scope,
        queries: Sequence[str],
        session_ids: Collection[str] | None = None,
        route: RoutePlan | None = None,
    ) -> "Ranking":
        """Score every candidate unit and session for the queries (validated first).

        ``route``: a plan that may expand through the relation graph (None: never).
        """
        return self._rank(scope, self.validate(queries, None), session_ids, route)

    def _rank(
        self, scope: Scope, qs: list[str], session_ids: Collection[str] | None,
        route: RoutePlan | None = None,
    ) -> "Ranking":
        p = self.params
        expansion = self._expand(scope, qs, route)
        lexs = [self.lexical.search(scope, q, p.candidate_units, session_ids) for q in qs]
        wanted = [content_stems(q) for q in qs]
        # The best BM25 hits' units, read once: for coverage now and for fusion below.
        found = self._units(scope, [lex[0].unit_id for lex in lexs if lex])
        covs = [fusion.coverage(words, self.facts(found[lex[0].unit_id]).held
                                if lex and lex[0].unit_id in found else ())
                for words, lex in zip(wanted, lexs)]
        # Ranked by BM25 alone: its best hit holds enough of a query that has content words.
        skipped = [p.dense_skip_coverage is not None and bool(w) and c >= p.dense_skip_coverage
                   for w, c in zip(wanted, covs)]
        encode = [q for q, skip in zip(qs, skipped) if not skip]
        qvecs = iter(self.query_vectors.embed(scope, encode) if encode else [])
        hits: list[tuple[list[Hit], list[Hit], list[Hit]]] = []
        cands = arrays.Candidates()
        use_sessions = self.session_lexical is not None and p.session_lexical_weight > 0
        for q, lex, skip in zip(qs, lexs, skipped):
            # Without sessions: each unit's session is read from the doc store below.
            dense = [] if skip else self.vectors.search(scope, next(qvecs), p.candidate_units,
                                                        session_ids, sessions=False)
            whole = (self.session_lexical.search(scope, q, p.session_candidates, session_ids)
                     if use_sessions and self.session_lexical is not None else [])
            cands.add_units(lex)
            cands.add_units(dense)
            hits.append((lex, dense, whole))

        n = len(cands.ids)
        found.update(self._units(scope, [i for i in cands.ids if i not in found]))
        facts = [None if u is None else self.facts(u) for u in map(found.get, cands.ids)]
        cands.sessions_from(facts)
        for sid in cands.unit_session:
            cands.add_session(sid)
        for _, _, whole in hits:
            for h in whole:
                cands.add_session(h.session_id)
        unit_sess = np.fromiter((cands.session_pos[sid] for sid in cands.unit_session),
                                dtype=np.intp, count=n)
        n_sessions = len(cands.session_ids)
        unplaced = cands.session_pos.get("")
        longest = max((f.longest for f in facts if f is not None), default=0)

        unit_best = np.full(n, -np.inf)
        first_seen = np.zeros(n, dtype=bool)
        order: list[int] = []
        final = np.full(n_sessions, -np.inf)
        final_has = np.zeros(n_sessions, dtype=bool)
        weights_used = []
        for q, (lex, dense, whole), skip, words, cov in zip(qs, hits, skipped, wanted, covs):
            weights = (fusion.coverage_weights(p.dense_weight, cov) if p.coverage_weighting
                       else p.weights)
            if skip:  # ranked by BM25 alone, on the same scale
                weights = {"lexical": 1.0, "dense": 0.0}
            scores, present, seen = arrays.fuse_units(cands, lex, dense, weights, p.fusion,
                                                      p.rrf_k)
            unit_best = np.where(present & (scores > unit_best), scores, unit_best)
            order.extend(i for i in seen if not first_seen[i])
            first_seen |= present
            sessions, has = arrays.session_best(cands, unit_sess, scores, present)
            if unplaced is not None:  # units no hit and no stored unit placed: no session
                has[unplaced] = False
            counts = arrays.keyword_counts(facts, unit_sess, present, n_sessions,
                                           fusion.tokens(q), longest)
            sessions = arrays.keyword_boost(sessions, has, counts, p.keyword_alpha,
                                            p.keyword_max_matches)
            w_sessions = self._session_weight(scope, words, cov, whole)
            if w_sessions > 0.0:
                idx = np.fromiter((cands.session_pos[h.session_id] for h in whole),
                                  dtype=np.intp, count=len(whole))
                listed = np.zeros(n_sessions)
                in_list = np.zeros(n_sessions, dtype=bool)
                in_list[idx] = True
                np.maximum.at(listed, idx, arrays.dbsf_values([h.score for h in whole]))
                sessions, has = arrays.blend_sessions(sessions, has, listed, in_list,
                                                      w_sessions)
            periods = dates.named_periods(q) if p.date_boost > 0 else []
            if periods:
                sessions = arrays.date_boost(sessions, has, self._fitting(cands, found, periods),
                                             p.date_boost)
            weights_used.append({**weights, "sessions": w_sessions})
            final = np.where(has & (sessions > final), sessions, final)
            final_has |= has
        best = unit_best.tolist()
        ranked = arrays.ranked_positions(order, best, facts)
        final_list = final.tolist()
        session_scores = dict((cands.session_ids[i], final_list[i])
                              for i in np.flatnonzero(final_has).tolist())
        if expansion is not None and (expansion.sessions or expansion.matched):
            self._lift(session_scores, expansion, session_ids)
        return Ranking(
            sessions=fusion.top_k(session_scores, len(session_scores)),
            units=[facts[i].unit for i in ranked],  # type: ignore[union-attr]
            unit_scores={cands.ids[i]: best[i] for i in order},
            weights=weights_used,
            expansion=expansion,
        )

    def _expand(self, scope: Scope, qs: list[str], route: RoutePlan | None
                ) -> Expansion | None:
        """The relation graph's walk and the bullet match for this search (None: the plan
        does neither)."""
        if route is None or not route.active:
            return None
        graph = load_graph(ProfileBook(self.docs), scope)
        question = route.question or qs[0]
        out = expand(graph, question, route)
        if route.match:
            named = list(out.named or named_entities(graph, question))
            if named:
                qvec = self.query_vectors.embed(scope, [question])[0]
                out.matched = match_bullets(graph, named, qvec, self.bullet_vectors)
        return out

    def _lift(self, scores: dict[str, float], expansion: Expansion,
              session_ids: Collection[str] | None) -> None:
        """Add the graph's share to the sessions it reached (those outside the filter: none).

        The share goes with the weight squared: weak links (a neighbour's bullet that holds
        one word of the question) were mostly noise on LoCoMo dev, strong ones mostly not.
        """
        allowed = None if session_ids is None else set(session_ids)
        top = max(scores.values(), default=0.0) or 1.0
        lifts = [(expansion.sessions, self.params.graph_boost if expansion.plan.expand else 0.0),
                 (expansion.matched, MATCH_BOOST)]
        expansion.boost = lifts[0][1] if expansion.sessions else 0.0
        expansion.match_boost = lifts[1][1] if expansion.matched else 0.0
        for weights, boost in lifts:
            for sid, w in weights.items():
                if boost > 0.0 and (allowed is None or sid in allowed):
                    scores[sid] = scores.get(sid, 0.0) + boost * top * w ** 2

    def _units(self, scope: Scope, unit_ids: list[str]) -> dict[str, L0Unit]:
        """The stored units of ``unit_ids`` by id (one doc-store call; none for no ids)."""
        return {u.id: u for u in self.docs.get_units(scope, unit_ids)} if unit_ids else {}

    @staticmethod
    def _fitting(cands: arrays.Candidates, units: dict[str, L0Unit],
                 periods: list[dates.Period]) -> np.ndarray:
        """Sessions whose date (as their units give it) fits one of ``periods``."""
        session_dates = {u.session_id: u.session_date for u in units.values()
                         if u.session_date is not None}
        fitting = np.zeros(len(cands.session_ids), dtype=bool)
        for sid, d in session_dates.items():
            at = cands.session_pos.get(sid)  # a session no hit named gets no score to lift
            if at is not None and dates.fits_any(periods, d.date()):
                fitting[at] = True
        return fitting

    def _session_weight(
        self, scope: Scope, wanted: set[str], unit_coverage: float, whole: Sequence[Hit]
    ) -> float:
        """The session-level BM25 list's share for this query (0 when it is not trusted).

        Trusted when BM25's best L0 hit covers enough of the query, or else when
        the best session document does (its raw turns are read only then).
        """
        p = self.params
        if not whole or p.session_lexical_weight == 0.0:
            return 0.0
        if unit_coverage >= p.session_min_unit_coverage:
            return p.session_lexical_weight
        turns = self.docs.get_turns(scope, whole[0].session_id)
        session_coverage = fusion.coverage(wanted, _session_stems(session_text(turns)))
        if session_coverage >= p.session_min_session_coverage:
            return p.session_lexical_weight
        return 0.0

    def search(
        self,
        scope: Scope,
        queries: Sequence[str],
        top_k: int | None = None,
        session_ids: Collection[str] | None = None,
        route: RoutePlan | None = None,
    ) -> list[SessionHit]:
        """The top sessions with their best-matching L0 units (at most five each)."""
        return self.search_expanded(scope, queries, top_k, session_ids, route)[0]

    def search_expanded(
        self,
        scope: Scope,
        queries: Sequence[str],
        top_k: int | None = None,
        session_ids: Collection[str] | None = None,
        route: RoutePlan | None = None,
    ) -> tuple[list[SessionHit], Expansion | None]:
        """:meth:`search`, with the relation graph's expansion (for a trace)."""
        ranking = self._rank(scope, self.validate(queries, top_k), session_ids, route)
        by_session: dict[str, list[L0Unit]] = {}
        for u in ranking.units:
            by_session.setdefault(u.session_id, []).append(u)
        hits: list[SessionHit] = []
        for sid, score in ranking.sessions[: top_k or self.params.top_k]:
            best = by_session.get(sid, [])
            # Validated construction: pydantic's model_construct (pure Python) measured
            # 2.2x slower than this for SessionHit.
            hits.append(SessionHit(
                session_id=sid,
                score=score,
                session_date=best[0].session_date if best else None,
                units=best[: self.params.units_per_hit],
            ))
        return hits, ranking.expansion


@lru_cache(maxsize=256)
def _session_stems(text: str) -> frozenset[str]:
    """Stems of a whole session's text (cached by the text: the same best sessions recur)."""
    return frozenset(stems(text))


@dataclass(frozen=True, slots=True)
class Ranking:
    """Everything one retrieval scored: sessions and units, best first."""

    sessions: list[tuple[str, float]]
    units: list[L0Unit]
    unit_scores: dict[str, float]
    #: The weights each query got (``lexical``, ``dense``, and ``sessions``: the
    #: session-level BM25 share, 0 when unused), in query order.
    weights: list[dict[str, float]] = field(default_factory=list)
    #: The relation graph's expansion (None: the route plan did not expand).
    expansion: Expansion | None = None
