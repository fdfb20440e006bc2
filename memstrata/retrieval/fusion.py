"""Score fusion for the hybrid retriever, as small pure functions.

These follow APDMem Appendix G:

* :func:`rrf` -- Reciprocal Rank Fusion of several rankings of L0 units,
  ``sum_j w_j / (k + rank_j)`` with 1-based ranks;

and beyond the appendix (the default, see :mod:`memstrata.retrieval.hybrid`):

* :func:`dbsf` -- distribution-based score normalisation: each list's raw
  scores mapped into [0, 1] by its own mean plus or minus three standard
  deviations, so a BM25 list and a cosine list can be added;
* :func:`weighted_sum` -- the normalised lists added with weights (a unit
  missing from a list gets 0 from it);
* :func:`coverage` and :func:`coverage_weights` -- how much of the query the
  best BM25 hit holds, and the weights that follow from it: BM25 gets its
  full share only when its best hit holds every content term of the query,
  and the dense side gets the rest;

then, for both:

* :func:`best_per_session` -- a session scores as its best unit;
* :func:`keyword_boost` -- an exact keyword-field match adds
  ``alpha * s_max * n_i`` where ``n_i`` is the (capped) match count;
* :func:`blend_sessions` -- a session-level ranking (BM25 over whole
  sessions) mixed into the session scores;
* :func:`date_boost` -- sessions whose date fits a period the question names
  get ``beta * s_max``;
* :func:`max_fuse` -- several queries fuse by each session's best score;
* :func:`top_k` -- deterministic ordering (score, then id).

Nothing here touches a store, so every rule is unit-tested on its own. The
retriever itself ranks with the numpy form of these rules
(:mod:`memstrata.retrieval.arrays`); :func:`best_per_session`,
:func:`keyword_boost`, :func:`blend_sessions`, :func:`date_boost`,
:func:`max_fuse`, :func:`keyword_matches` and :func:`phrase_matches` are kept
as its reference: tests/unit/test_retrieval_arrays.py checks that both rank
alike, bit for bit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from memstrata.memo import memo

_TOKEN = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")


def rrf(
    rankings: Mapping[str, Sequence[str]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Fuse rankings (name -> ids best first) into one score per id.

    An id missing from a ranking simply gets nothing from it. Duplicate ids in
    one ranking count once, at their best rank.
    """
    if k <= 0:
        raise ValueError(f"rrf k must be positive, got {k}")
    scores: dict[str, float] = {}
    for name, ids in rankings.items():
        w = 1.0 if weights is None else weights.get(name, 0.0)
        if w == 0.0:
            continue
        seen: set[str] = set()
        for rank, item in enumerate(ids, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return scores


def dbsf(scores: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Normalise one list's ``(id, score)`` pairs into [0, 1] by its own spread.

    The range is the list's mean plus or minus three (population) standard
    deviations, clipped, so an outlying best hit keeps its lead while a flat
    list stays flat. A list whose scores are all equal maps to 1.0 (every hit
    equally good); duplicate ids keep their best score.
    """
    if not scores:
        return {}
    # Plain float arithmetic: the statistics module's exact sums cost ~0.2 ms a list.
    values = [s for _, s in scores]
    mean = math.fsum(values) / len(values)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    out: dict[str, float] = {}
    for item, s in scores:
        norm = 1.0 if spread == 0.0 else (s - (mean - 3 * spread)) / (6 * spread)
        norm = min(max(norm, 0.0), 1.0)
        if norm > out.get(item, -1.0):
            out[item] = norm
    return out


def weighted_sum(
    lists: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]
) -> dict[str, float]:
    """``sum_j w_j * s_j(id)`` over normalised lists; an id absent from a list gets 0 there."""
    scores: dict[str, float] = {}
    for name, per_id in lists.items():
        w = weights.get(name, 0.0)
        for item, s in per_id.items():
            scores[item] = scores.get(item, 0.0) + w * s
    return scores


def coverage(query_terms: Collection[str], doc_terms: Collection[str]) -> float:
    """Share of the query's terms that the document holds (1.0 for a query with none)."""
    wanted = set(query_terms)
    if not wanted:
        return 1.0
    return len(wanted.intersection(doc_terms)) / len(wanted)


def coverage_weights(dense_weight: float, lexical_coverage: float) -> dict[str, float]:
    """Fusion weights when BM25's best hit covers ``lexical_coverage`` of the query.

    With full coverage the weights are ``1 - dense_weight`` and ``dense_weight``;
    BM25's share shrinks in proportion as coverage drops, because a best hit
    that matches only a generic word of the question ("first", "home") ranks
    by that word alone, and the dense side takes the difference.
    """
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError(f"dense_weight must be within [0, 1], got {dense_weight}")
    c = min(max(lexical_coverage, 0.0), 1.0)
    lexical = (1.0 - dense_weight) * c
    return {"lexical": lexical, "dense": 1.0 - lexical}


def best_per_session(
    unit_scores: Mapping[str, float], unit_session: Mapping[str, str]
) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Session score = its best unit's score; also each session's units, best first."""
    sessions: dict[str, float] = {}
    members: dict[str, list[str]] = {}
    for unit, score in sorted(unit_scores.items(), key=lambda kv: (-kv[1], kv[0])):
        sid = unit_session.get(unit)
        if sid is None:
            continue
        members.setdefault(sid, []).append(unit)
        if sid not in sessions:
            sessions[sid] = score
    return sessions, members


def keyword_boost(
    session_scores: Mapping[str, float],
    match_counts: Mapping[str, int],
    alpha: float = 0.1,
    max_matches: int = 3,
) -> dict[str, float]:
    """Add ``alpha * s_max * min(n_i, max_matches)`` to each session's score.

    ``s_max`` is the best score before boosting, so the boost is on the same
    scale as the fused scores whatever k and the weights are.
    """
    if not session_scores:
        return {}
    s_max = max(session_scores.values())
    return {
        sid: s + alpha * s_max * min(max(match_counts.get(sid, 0), 0), max_matches)
        for sid, s in session_scores.items()
    }


def blend_sessions(
    session_scores: Mapping[str, float],
    session_list: Mapping[str, float],
    weight: float,
) -> dict[str, float]:
    """``(1 - weight) * s + weight * s_max * n`` per session.

    ``session_list`` holds normalised [0, 1] scores of a ranking of whole
    sessions (:func:`dbsf`); ``s_max`` is the best score of ``session_scores``,
    so the blend keeps their scale. A session found by only one side gets 0
    from the other.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"session weight must be within [0, 1], got {weight}")
    if weight == 0.0 or not session_list:
        return dict(session_scores)
    s_max = max(session_scores.values(), default=1.0)
    return {
        sid: (1.0 - weight) * session_scores.get(sid, 0.0)
        + weight * s_max * session_list.get(sid, 0.0)
        for sid in {*session_scores, *session_list}
    }


def date_boost(
    session_scores: Mapping[str, float], matching: Collection[str], beta: float
) -> dict[str, float]:
    """Add ``beta * s_max`` to each session in ``matching`` (its date fits the question)."""
    if not session_scores or beta == 0.0 or not matching:
        return dict(session_scores)
    bonus = beta * max(session_scores.values())
    return {sid: s + (bonus if sid in matching else 0.0) for sid, s in session_scores.items()}


def max_fuse(per_query: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Multi-query fusion: each session keeps its best score over the queries."""
    fused: dict[str, float] = {}
    for scores in per_query:
        for sid, s in scores.items():
            if s > fused.get(sid, float("-inf")):
                fused[sid] = s
    return fused


def top_k(scores: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` best (id, score) pairs; ties broken by id so results are stable."""
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: max(k, 0)]


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, as used for exact keyword matching."""
    return _TOKEN.findall(text.lower())


def keyword_matches(query_tokens: Sequence[str], keywords: Iterable[str]) -> int:
    """How many distinct keywords occur in the query as whole token sequences.

    "exact" means every token of the keyword appears contiguously in the query
    (case-insensitive), so "support group" matches "the LGBTQ support group"
    but not "group support".
    """
    if not query_tokens:
        return 0
    joined = " " + " ".join(query_tokens) + " "
    found: set[str] = set()
    for kw in keywords:
        phrase = _phrase(kw)
        if phrase and phrase not in found and phrase in joined:
            found.add(phrase)
    return len(found)


def phrase_matches(query_tokens: Sequence[str], phrase_lists: Iterable[Sequence[str]]) -> int:
    """:func:`keyword_matches` over keywords already in phrase form (:func:`phrases`).

    The retriever turns each unit's keywords into phrases once (cached by
    content) and counts a session's matches from its units' lists, instead of
    re-deriving every keyword's phrase for every session and query.
    """
    if not query_tokens:
        return 0
    joined = " " + " ".join(query_tokens) + " "
    return len({p for ps in phrase_lists for p in ps if p in joined})


@memo(65536)
def phrases(keywords: tuple[str, ...]) -> tuple[str, ...]:
    """The distinct non-empty `` tok tok `` forms of ``keywords`` (cached by content)."""
    return tuple(dict.fromkeys(p for p in map(_phrase, keywords) if p))


@memo(65536)
def _phrase(keyword: str) -> str:
    """`` tok tok `` form of a keyword (cached: the same keywords recur across queries)."""
    kt = tokens(keyword)
    return f" {' '.join(kt)} " if kt else ""
