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
appendix's retriever exactly. ``memstrata eval retrieval`` measures both; the
README has the numbers.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from memstrata.config import Settings
from memstrata.embed.types import Embedder
from memstrata.model import L0Unit, Scope, SessionHit
from memstrata.retrieval import fusion, indexing
from memstrata.store.types import DocStore, Hit, LexicalStore, VectorStore
from memstrata.text.terms import content_stems, stems


class QueryError(ValueError):
    """A search request breaks a limit; the message names the field and the limit."""


@dataclass(frozen=True, slots=True)
class RetrievalParams:
    fusion: Literal["dbsf", "rrf"] = "dbsf"
    rrf_k: int = 60
    #: The dense side's share when BM25's best hit covers the whole query.
    dense_weight: float = 0.3
    coverage_weighting: bool = True
    keyword_alpha: float = 0.1
    keyword_max_matches: int = 3
    top_k: int = 20
    max_top_k: int = 1000
    units_per_hit: int = 5
    candidate_units: int = 50
    max_query_chars: int = 2000
    max_queries: int = 8

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
            max_query_chars=s.max_query_chars,
            max_queries=s.max_queries,
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
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.docs = docs
        self.params = params or RetrievalParams()

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
        cap = self.params.max_top_k
        if top_k is not None and not 1 <= top_k <= cap:
            raise QueryError(f"top_k: must be between 1 and {cap}, got {top_k}")
        cleaned = [q.strip() for q in queries if q.strip()]
        if not cleaned:
            raise QueryError("queries: all queries are empty")
        return cleaned

    def rank(
        self,
        scope: Scope,
        queries: Sequence[str],
        session_ids: Collection[str] | None = None,
    ) -> "Ranking":
        """Score every candidate unit and session for the queries (validated first)."""
        return self._rank(scope, self.validate(queries, None), session_ids)

    def _rank(
        self, scope: Scope, qs: list[str], session_ids: Collection[str] | None
    ) -> "Ranking":
        p = self.params
        qvecs = self.embedder.embed_queries(qs)
        hits: list[tuple[list[Hit], list[Hit]]] = []
        unit_session: dict[str, str] = {}
        for q, qv in zip(qs, qvecs):
            lex = self.lexical.search(scope, q, p.candidate_units, session_ids)
            dense = self.vectors.search(scope, qv, p.candidate_units, session_ids)
            for h in (*lex, *dense):
                unit_session[h.unit_id] = h.session_id
            hits.append((lex, dense))

        units = {u.id: u for u in self.docs.get_units(scope, list(unit_session))}
        # Each unit's keyword field once, whatever the number of queries.
        unit_keywords = {uid: indexing.lexical_keywords(u) for uid, u in units.items()}
        unit_best: dict[str, float] = {}
        boosted = []
        weights_used = []
        for q, (lex, dense) in zip(qs, hits):
            weights = self._weights(q, lex, units, unit_keywords)
            weights_used.append(weights)
            unit_scores = self._fuse(lex, dense, weights)
            for u, sc in unit_scores.items():
                if sc > unit_best.get(u, float("-inf")):
                    unit_best[u] = sc
            sessions, members = fusion.best_per_session(unit_scores, unit_session)
            qt = fusion.tokens(q)
            matches = {
                sid: fusion.keyword_matches(
                    qt, (kw for uid in uids for kw in unit_keywords.get(uid, ()))
                )
                for sid, uids in members.items()
            }
            boosted.append(
                fusion.keyword_boost(sessions, matches, p.keyword_alpha, p.keyword_max_matches)
            )
        final = fusion.max_fuse(boosted)
        ranked_units = sorted(
            (units[u] for u in unit_best if u in units),
            key=lambda u: (-unit_best[u.id], u.session_id, u.turn_index),
        )
        return Ranking(
            sessions=fusion.top_k(final, len(final)),
            units=ranked_units,
            unit_scores=unit_best,
            weights=weights_used,
        )

    def _weights(
        self,
        query: str,
        lex: Sequence[Hit],
        units: dict[str, L0Unit],
        unit_keywords: dict[str, list[str]],
    ) -> dict[str, float]:
        """This query's fusion weights: fixed, or scaled by BM25's best-hit coverage."""
        p = self.params
        if not p.coverage_weighting:
            return p.weights
        top = units.get(lex[0].unit_id) if lex else None
        held = stems(" ".join([top.summary, *unit_keywords.get(top.id, ())])) if top else ()
        # No BM25 hit holds nothing (coverage 0), unless the query has no content words.
        return fusion.coverage_weights(p.dense_weight, fusion.coverage(content_stems(query), held))

    def _fuse(
        self, lex: Sequence[Hit], dense: Sequence[Hit], weights: dict[str, float]
    ) -> dict[str, float]:
        """One query's unit scores from its two hit lists."""
        if self.params.fusion == "rrf":
            return fusion.rrf(
                {"lexical": [h.unit_id for h in lex], "dense": [h.unit_id for h in dense]},
                k=self.params.rrf_k,
                weights=weights,
            )
        return fusion.weighted_sum(
            {
                "lexical": fusion.dbsf([(h.unit_id, h.score) for h in lex]),
                "dense": fusion.dbsf([(h.unit_id, h.score) for h in dense]),
            },
            weights,
        )

    def search(
        self,
        scope: Scope,
        queries: Sequence[str],
        top_k: int | None = None,
        session_ids: Collection[str] | None = None,
    ) -> list[SessionHit]:
        """The top sessions with their best-matching L0 units (at most five each)."""
        ranking = self._rank(scope, self.validate(queries, top_k), session_ids)
        by_session: dict[str, list[L0Unit]] = {}
        for u in ranking.units:
            by_session.setdefault(u.session_id, []).append(u)
        hits: list[SessionHit] = []
        for sid, score in ranking.sessions[: top_k or self.params.top_k]:
            best = by_session.get(sid, [])
            hits.append(SessionHit(
                session_id=sid,
                score=score,
                session_date=best[0].session_date if best else None,
                units=best[: self.params.units_per_hit],
            ))
        return hits


@dataclass(frozen=True, slots=True)
class Ranking:
    """Everything one retrieval scored: sessions and units, best first."""

    sessions: list[tuple[str, float]]
    units: list[L0Unit]
    unit_scores: dict[str, float]
    #: The fusion weights each query got (``lexical``, ``dense``), in query order.
    weights: list[dict[str, float]] = field(default_factory=list)
