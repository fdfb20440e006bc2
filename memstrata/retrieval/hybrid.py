"""The hybrid L0 retriever (APDMem Appendix G).

For each query: BM25 over L0 summaries and keywords, dense cosine over L0
embeddings, Reciprocal Rank Fusion of the two unit rankings, a session scored
by its best unit, plus a boost for exact keyword-field matches. Several queries
fuse by each session's best score. Every store call is confined to one scope.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from memstrata.config import Settings
from memstrata.embed.types import Embedder
from memstrata.model import L0Unit, Scope, SessionHit
from memstrata.retrieval import fusion, indexing
from memstrata.store.types import DocStore, LexicalStore, VectorStore


class QueryError(ValueError):
    """A search request breaks a limit; the message names the field and the limit."""


@dataclass(frozen=True, slots=True)
class RetrievalParams:
    rrf_k: int = 60
    dense_weight: float = 0.5
    keyword_alpha: float = 0.1
    keyword_max_matches: int = 3
    top_k: int = 20
    candidate_units: int = 50
    max_query_chars: int = 2000
    max_queries: int = 8

    @classmethod
    def from_settings(cls, s: Settings) -> "RetrievalParams":
        return cls(
            rrf_k=s.rrf_k,
            dense_weight=s.dense_weight,
            keyword_alpha=s.keyword_alpha,
            keyword_max_matches=s.keyword_max_matches,
            top_k=s.top_k_sessions,
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
        if top_k is not None and not 1 <= top_k <= 1000:
            raise QueryError(f"top_k: must be between 1 and 1000, got {top_k}")
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
        per_query: list[dict[str, float]] = []
        per_query_members: list[dict[str, list[str]]] = []
        unit_session: dict[str, str] = {}
        unit_best: dict[str, float] = {}
        for q, qv in zip(qs, qvecs):
            lex = self.lexical.search(scope, q, p.candidate_units, session_ids)
            dense = self.vectors.search(scope, qv, p.candidate_units, session_ids)
            for h in (*lex, *dense):
                unit_session[h.unit_id] = h.session_id
            unit_scores = fusion.rrf(
                {"lexical": [h.unit_id for h in lex], "dense": [h.unit_id for h in dense]},
                k=p.rrf_k,
                weights=p.weights,
            )
            for u, s in unit_scores.items():
                if s > unit_best.get(u, float("-inf")):
                    unit_best[u] = s
            sessions, members = fusion.best_per_session(unit_scores, unit_session)
            per_query.append(sessions)
            per_query_members.append(members)

        units = {u.id: u for u in self.docs.get_units(scope, list(unit_session))}
        # Each unit's keyword field once, whatever the number of queries.
        unit_keywords = {uid: indexing.lexical_keywords(u) for uid, u in units.items()}
        boosted = []
        for q, sessions, members in zip(qs, per_query, per_query_members):
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
                units=best[:5],
            ))
        return hits


@dataclass(frozen=True, slots=True)
class Ranking:
    """Everything one retrieval scored: sessions and units, best first."""

    sessions: list[tuple[str, float]]
    units: list[L0Unit]
    unit_scores: dict[str, float]
