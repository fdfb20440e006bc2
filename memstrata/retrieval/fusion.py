"""Score fusion for the hybrid retriever, as small pure functions.

These follow APDMem Appendix G:

* :func:`rrf` -- Reciprocal Rank Fusion of several rankings of L0 units,
  ``sum_j w_j / (k + rank_j)`` with 1-based ranks;
* :func:`best_per_session` -- a session scores as its best unit;
* :func:`keyword_boost` -- an exact keyword-field match adds
  ``alpha * s_max * n_i`` where ``n_i`` is the (capped) match count;
* :func:`max_fuse` -- several queries fuse by each session's best score;
* :func:`top_k` -- deterministic ordering (score, then id).

Nothing here touches a store, so every rule is unit-tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

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


@lru_cache(maxsize=65536)
def _phrase(keyword: str) -> str:
    """`` tok tok `` form of a keyword (cached: the same keywords recur across queries)."""
    kt = tokens(keyword)
    return f" {' '.join(kt)} " if kt else ""
