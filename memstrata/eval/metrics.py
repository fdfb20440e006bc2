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


def paired_ratio_difference(
    num_a: Sequence[int], den_a: Sequence[int], num_b: Sequence[int], den_b: Sequence[int],
    *, resamples: int = 2000, seed: int = 0,
) -> dict[str, float | int | None]:
    """``sum(num_a)/sum(den_a) - sum(num_b)/sum(den_b)`` over paired questions, with a
    bootstrap 95% interval.

    For rates whose denominator is itself per question (precision: right over
    answered): each resample draws questions with replacement and recomputes
    both ratios on the same draw, so the interval respects the pairing.
    Draws where a denominator is zero are skipped; ``diff`` is None when a
    whole run has no denominator.
    """
    import numpy as np

    n = len(num_a)
    if not (len(den_a) == len(num_b) == len(den_b) == n):
        raise ValueError("paired lists differ in length")
    da, db = sum(den_a), sum(den_b)
    if n == 0 or da == 0 or db == 0:
        return {"diff": None, "ci95_low": None, "ci95_high": None, "questions": n}
    cols = np.array([num_a, den_a, num_b, den_b], dtype=np.int64)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    sums = cols[:, idx].sum(axis=2)  # (4, resamples)
    ok = (sums[1] > 0) & (sums[3] > 0)
    diffs = np.sort(sums[0, ok] / sums[1, ok] - sums[2, ok] / sums[3, ok])
    low = float(diffs[int(0.025 * (len(diffs) - 1))]) if len(diffs) else None
    high = float(diffs[int(0.975 * (len(diffs) - 1))]) if len(diffs) else None
    return {"diff": sum(num_a) / da - sum(num_b) / db, "ci95_low": low, "ci95_high": high,
            "questions": n}
