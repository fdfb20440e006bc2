"""Offline (construction) and online cost per question, as APDMem's Table 2 reports them.

Offline is what building memory cost: the L0 builds at ingest, shared out
over the questions asked about that user's haystack, plus the L1/L2 builds
the question's own answer caused (its ``llm:builder`` steps). Online is what
answering cost: every other LLM call of the answer. Beside them, the share
of the haystack the answer read (``haystack_read``): memory tokens read
(estimated, as the trace counts them) over the tokens of all the user's raw
sessions. A full-context answer reads 1.0; a turn read at several layers counts
each time, so on a tiny haystack the share can pass 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from memstrata.contract import Answer
from memstrata.evidence import lexical
from memstrata.evidence.trace import MEMORY_ROLE
from memstrata.llm.usage import PriceTable, RoleUsage
from memstrata.model import Session


def haystack_tokens(sessions: Iterable[Session]) -> dict[tuple[str, str], int]:
    """Estimated tokens of every (tenant, user)'s sessions, raw turns as the builder reads."""
    out: dict[tuple[str, str], int] = {}
    for s in sessions:
        key = (s.scope.tenant_id, s.scope.user_id)
        out[key] = out.get(key, 0) + sum(lexical.estimate_tokens(t.text()) for t in s.turns)
    return out


def answer_cost(answer: Answer, prices: PriceTable) -> dict[str, Any]:
    """One answer's cost, split: L1/L2 builds it caused vs answering (USD and tokens)."""
    lazy_usd, lazy_tokens = 0.0, 0
    for step in answer.steps:
        if step.tool != "llm:builder":
            continue
        price = prices.price_for(str(step.arguments.get("model", "")))
        lazy_usd += price.cost(step.tokens_in, step.tokens_out) if price else 0.0
        lazy_tokens += step.tokens_in + step.tokens_out
    tokens = answer.summary.tokens
    online_tokens = sum(t.tokens_in + t.tokens_out for role, t in tokens.items()
                        if role not in (MEMORY_ROLE, "builder"))
    read = tokens.get(MEMORY_ROLE)
    return {"online_usd": max(0.0, answer.summary.cost_usd - lazy_usd),
            "online_tokens": online_tokens,
            "lazy_construction_usd": lazy_usd, "lazy_construction_tokens": lazy_tokens,
            "memory_tokens_read": read.tokens_out if read is not None else 0}


def add_offline(cost: dict[str, Any], ingest: RoleUsage, ingest_usd: float, questions: int,
                haystack: int) -> dict[str, Any]:
    """``cost`` with its share of the user's ingest construction and of the haystack read."""
    share = 1 / questions if questions else 0.0
    out = dict(cost)
    out["offline_usd"] = ingest_usd * share + cost.get("lazy_construction_usd", 0.0)
    out["offline_tokens"] = (ingest.total_tokens * share
                             + cost.get("lazy_construction_tokens", 0))
    out["haystack_tokens"] = haystack
    out["haystack_read"] = (cost.get("memory_tokens_read", 0) / haystack) if haystack else None
    return out


def _stats(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "total": 0.0}
    return {"mean": statistics.fmean(values), "p50": statistics.median(values),
            "total": float(sum(values))}


def cost_report(costs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-question means (and medians, totals) of the offline and online cost."""
    kept = [c for c in costs if c]

    def col(name: str) -> list[float]:
        return [float(c[name]) for c in kept if c.get(name) is not None]

    return {
        "questions": len(kept),
        "offline_usd": _stats(col("offline_usd")),
        "offline_tokens": _stats(col("offline_tokens")),
        "online_usd": _stats(col("online_usd")),
        "online_tokens": _stats(col("online_tokens")),
        "lazy_construction_tokens": _stats(col("lazy_construction_tokens")),
        "haystack_read": _stats(col("haystack_read")),
    }
