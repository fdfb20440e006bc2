"""Ranking metrics for retrieval evaluation (binary relevance)."""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Sequence


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """Share of the gold items found in the top ``k``; None when there is no gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    return len(gold_set.intersection(ranked[:k])) / len(gold_set)


def covered_recall_at_k(
    ranked: Sequence[Collection[str]], gold: Collection[str], k: int
) -> float | None:
    """Recall where each ranked item covers several gold ids (a turn holds several messages)."""
    gold_set = set(gold)
    if not gold_set:
        return None
    covered: set[str] = set()
    for item in ranked[:k]:
        covered.update(item)
    return len(gold_set & covered) / len(gold_set)


def ndcg_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """Normalised discounted cumulative gain with binary gains; None without gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    seen: set[str] = set()
    dcg = 0.0
    for i, item in enumerate(ranked[:k], start=1):
        if item in gold_set and item not in seen:
            dcg += 1.0 / math.log2(i + 1)
            seen.add(item)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values (None when there are none)."""
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def paired_difference(
    ours: Sequence[float], theirs: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> dict[str, float | int]:
    """Mean of ``ours - theirs`` over paired questions, with a bootstrap 95% interval.

    Questions are resampled with replacement ``resamples`` times (fixed seed,
    so the interval is reproducible); ``better`` and ``worse`` count the
    questions where the two systems differ. An interval that excludes zero
    means the gap is unlikely to be one lucky draw of questions.
    """
    if len(ours) != len(theirs):
        raise ValueError(f"paired lists differ in length: {len(ours)} vs {len(theirs)}")
    diffs = [a - b for a, b in zip(ours, theirs)]
    n = len(diffs)
    if n == 0:
        return {"diff": 0.0, "ci95_low": 0.0, "ci95_high": 0.0, "better": 0, "worse": 0,
                "questions": 0}
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return {
        "diff": sum(diffs) / n,
        "ci95_low": means[int(0.025 * (resamples - 1))],
        "ci95_high": means[int(0.975 * (resamples - 1))],
        "better": sum(1 for d in diffs if d > 0),
        "worse": sum(1 for d in diffs if d < 0),
        "questions": n,
    }
