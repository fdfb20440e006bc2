"""Ranking metrics for retrieval evaluation (binary relevance)."""

from __future__ import annotations

import math
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
