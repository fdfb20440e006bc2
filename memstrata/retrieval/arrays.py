"""The retriever's fusion over arrays of candidates, with the same arithmetic as :mod:`fusion`.

A search scores about 80 candidate units and 20-60 sessions per query. The
rules in :mod:`memstrata.retrieval.fusion` are written over dicts, one Python
operation per candidate and rule; here one search's candidates get positions
once, and every rule runs over numpy arrays indexed by them (weighted sums,
best unit per session, keyword, session and date boosts, the fusion of
several queries). Each floating-point operation is the one the dict version
does, in the same order, so scores are equal bit for bit and rankings are
identical (``tests/unit/test_retrieval_arrays.py`` checks this against the
dict rules on generated inputs).

What a unit contributes besides its scores (its keyword phrases, the stems
its text holds) is derived once per unit object and remembered
(:class:`UnitFacts`): the doc store hands out the same parsed object for the
same stored text, so a unit seen by an earlier search costs one dict lookup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from memstrata.model import L0Unit
from memstrata.retrieval import fusion, indexing
from memstrata.unit_caches import PerUnit
from memstrata.store.types import Hit
from memstrata.text.terms import stems

FloatArray = np.ndarray
IntArray = np.ndarray


@dataclass(slots=True)
class Facts:
    """What one unit brings to a search besides its scores (derived once per unit)."""

    unit: L0Unit
    #: The BM25 keyword field: keywords plus dates in words.
    keywords: tuple[str, ...]
    #: Its keywords in `` tok tok `` form, distinct (for exact keyword matches).
    phrases: frozenset[str]
    #: Tokens in its longest phrase (0: none).
    longest: int
    #: Stems of its summary and keyword field (coverage); computed on first use.
    _held: frozenset[str] | None = None

    @property
    def held(self) -> frozenset[str]:
        if self._held is None:
            self._held = frozenset(stems(" ".join([self.unit.summary, *self.keywords])))
        return self._held


def unit_facts(unit: L0Unit) -> Facts:
    """What one unit brings to a search, derived from its keywords."""
    kws = tuple(indexing.lexical_keywords(unit))
    phrases = fusion.phrases(kws)
    return Facts(unit, kws, frozenset(phrases),
                 max((p.count(" ") - 1 for p in phrases), default=0))


class UnitFacts(PerUnit[Facts]):
    """:class:`Facts` per unit object, bounded (oldest out first), thread-safe; a
    delete drops the user's entries (:mod:`memstrata.unit_caches`)."""

    def __init__(self, size: int | None = None) -> None:
        super().__init__(unit_facts, size)


def query_grams(query_tokens: Sequence[str], longest: int) -> frozenset[str]:
    """Every run of up to ``longest`` consecutive query tokens in `` tok tok `` form.

    A keyword phrase occurs in `` q1 q2 ... `` (:func:`fusion.phrase_matches`)
    exactly when its tokens are such a run: both are space-delimited and
    tokens hold no spaces. So a phrase matches iff it is in this set.
    """
    n = len(query_tokens)
    return frozenset(
        f" {' '.join(query_tokens[i:j])} "
        for i in range(n) for j in range(i + 1, min(n, i + longest) + 1)
    )


@dataclass
class Candidates:
    """One search's candidate units and sessions, each at a fixed position."""

    ids: list[str] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    session_ids: list[str] = field(default_factory=list)
    session_pos: dict[str, int] = field(default_factory=dict)
    #: Per unit, the session it belongs to (as the hits said, the last one winning;
    #: empty while only hits without sessions named it: see :meth:`sessions_from`).
    unit_session: list[str] = field(default_factory=list)

    def add_units(self, hits: Iterable[Hit]) -> None:
        for h in hits:
            p = self.pos.get(h.unit_id)
            if p is None:
                self.pos[h.unit_id] = len(self.ids)
                self.ids.append(h.unit_id)
                self.unit_session.append(h.session_id)
            elif h.session_id:
                self.unit_session[p] = h.session_id

    def sessions_from(self, facts: Sequence[Facts | None]) -> None:
        """Fill the sessions no hit named from the units read (by position).

        A unit that neither a hit nor the doc store places keeps the empty
        session, which the ranking drops: it cannot lift a session it may not
        belong to.
        """
        us = self.unit_session
        for i, sid in enumerate(us):
            if not sid:
                f = facts[i]
                if f is not None:
                    us[i] = f.unit.session_id

    def add_session(self, sid: str) -> int:
        p = self.session_pos.get(sid)
        if p is None:
            p = self.session_pos[sid] = len(self.session_ids)
            self.session_ids.append(sid)
        return p


def dbsf_values(scores: Sequence[float]) -> FloatArray:
    """:func:`fusion.dbsf`'s normalised scores, in list order (duplicates not merged)."""
    n = len(scores)
    if n == 0:
        return np.zeros(0)
    mean = math.fsum(scores) / n
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in scores) / n)
    if spread == 0.0:
        return np.ones(n)
    norm = (np.asarray(scores, dtype=np.float64) - (mean - 3 * spread)) / (6 * spread)
    return np.minimum(np.maximum(norm, 0.0), 1.0)


def _spread(idx: IntArray, values: FloatArray, size: int, unique: bool
            ) -> tuple[FloatArray, np.ndarray]:
    """Values at positions (best value for a repeated position) and a presence mask."""
    out = np.zeros(size)
    present = np.zeros(size, dtype=bool)
    present[idx] = True
    if unique:
        out[idx] = values
    else:  # dbsf keeps a repeated id's best score; values are >= 0, so max over zeros
        np.maximum.at(out, idx, values)
    return out, present


def fuse_units(cands: Candidates, lex: Sequence[Hit], dense: Sequence[Hit],
               weights: dict[str, float], how: Literal["dbsf", "rrf"], rrf_k: int
               ) -> tuple[FloatArray, np.ndarray, list[int]]:
    """One query's unit scores over the candidates (:meth:`HybridRetriever._fuse`).

    Returns the scores, which candidates this query scored, and those
    positions in the order the dict version first inserts them.
    """
    n = len(cands.ids)
    pos = cands.pos
    total = np.zeros(n)
    present = np.zeros(n, dtype=bool)
    order: list[int] = []
    for name, hits in (("lexical", lex), ("dense", dense)):
        if not hits:
            continue
        if how == "rrf":
            w = weights.get(name, 0.0)
            if w == 0.0:  # fusion.rrf skips a ranking of weight 0
                continue
            first: dict[int, int] = {}
            for rank, h in enumerate(hits, start=1):
                first.setdefault(pos[h.unit_id], rank)
            idx = np.fromiter(first, dtype=np.intp, count=len(first))
            vals = np.array([w / (rrf_k + r) for r in first.values()])
            part, mask = _spread(idx, vals, n, True)
            ordered: Iterable[int] = first
        else:
            w = weights.get(name, 0.0)
            idx = np.fromiter((pos[h.unit_id] for h in hits), dtype=np.intp, count=len(hits))
            unique = len(set(idx.tolist())) == len(hits)
            norm, mask = _spread(idx, dbsf_values([h.score for h in hits]), n, unique)
            part = w * norm
            ordered = dict.fromkeys(idx.tolist())
        # fusion.weighted_sum / rrf: scores.get(id, 0.0) + w * s, lexical first
        total = total + part
        order.extend(p for p in ordered if not present[p])
        present |= mask
    return total, present, order


def session_best(cands: Candidates, unit_sess: IntArray, scores: FloatArray,
                 present: np.ndarray) -> tuple[FloatArray, np.ndarray]:
    """Each session's best unit score (:func:`fusion.best_per_session`) and presence."""
    s = len(cands.session_ids)
    best = np.full(s, -np.inf)
    np.maximum.at(best, unit_sess[present], scores[present])
    has = np.zeros(s, dtype=bool)
    has[unit_sess[present]] = True
    return best, has


def keyword_counts(facts: Sequence[Facts | None], unit_sess: IntArray, present: np.ndarray,
                   sessions: int, query_tokens: Sequence[str], longest: int) -> FloatArray:
    """Distinct keyword phrases of each session's scored units that the query holds."""
    counts = np.zeros(sessions)
    if not query_tokens or longest == 0:
        return counts
    grams = query_grams(query_tokens, longest)
    per_session: dict[int, set[str]] = {}
    for i in np.flatnonzero(present).tolist():
        f = facts[i]
        if f is not None and f.phrases and not grams.isdisjoint(f.phrases):
            per_session.setdefault(int(unit_sess[i]), set()).update(f.phrases & grams)
    for sp, found in per_session.items():
        counts[sp] = len(found)
    return counts


def keyword_boost(scores: FloatArray, has: np.ndarray, counts: FloatArray, alpha: float,
                  max_matches: int) -> FloatArray:
    """:func:`fusion.keyword_boost` over the present sessions."""
    if not has.any():
        return scores
    s_max = float(scores[has].max())
    n = np.minimum(np.maximum(counts, 0), max_matches)
    return np.where(has, scores + alpha * s_max * n, scores)


def blend_sessions(scores: FloatArray, has: np.ndarray, listed: FloatArray,
                   in_list: np.ndarray, weight: float) -> tuple[FloatArray, np.ndarray]:
    """:func:`fusion.blend_sessions`: the whole-session list mixed in (union of both)."""
    s_max = float(scores[has].max()) if has.any() else 1.0
    mine = np.where(has, scores, 0.0)
    theirs = np.where(in_list, listed, 0.0)
    union = has | in_list
    return np.where(union, (1.0 - weight) * mine + weight * s_max * theirs, scores), union


def date_boost(scores: FloatArray, has: np.ndarray, fitting: np.ndarray,
               beta: float) -> FloatArray:
    """:func:`fusion.date_boost` over the present sessions."""
    if not has.any() or beta == 0.0 or not fitting.any():
        return scores
    bonus = beta * float(scores[has].max())
    return np.where(has & fitting, scores + bonus, scores)


def ranked_positions(order: Sequence[int], best: Sequence[float],
                     facts: Sequence[Facts | None]) -> list[int]:
    """The positions in ``order`` that have a unit, by (-best, session id, turn index), stably.

    The rank in ``order`` closes each key, so sorting the tuples is the stable sort.
    """
    keyed = []
    for rank, i in enumerate(order):
        f = facts[i]
        if f is not None:
            keyed.append((-best[i], f.unit.session_id, f.unit.turn_index, rank, i))
    keyed.sort()
    return [k[4] for k in keyed]
