"""The papers' QA protocol around a run: BLEU-1, iterations, error split, baselines side by side.

:func:`extend_report` adds to a QA report (:func:`memstrata.eval.qa.aggregate`)
what the memory papers print beside F1: BLEU-1 per category, the
controller's iterations per question (median, p95, p99) and the split of
wrong answers into retrieval and generation errors
(:mod:`memstrata.eval.errors`). :func:`side_by_side` puts the system and the
baselines (:mod:`memstrata.eval.baselines`) in one table: accuracy (the
judge's, where it graded), F1, BLEU-1, precision and coverage, tokens and
cost per question, and the error split.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.eval.bleu import score_bleu1
from memstrata.eval.errors import error_kind, error_split
from memstrata.eval.qa import QAResult

#: How to get the plots when matplotlib is missing (the quick-start install has none).
PLOTS_HINT = "plots need matplotlib: pip install 'memstrata[eval]'"


def _get(r: QAResult | Mapping[str, Any], key: str) -> Any:
    return r.get(key) if isinstance(r, Mapping) else getattr(r, key)


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """Median, p95, p99 (nearest rank), mean and max; all None for no values."""
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "max": None}
    ordered = sorted(float(v) for v in values)

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return {"p50": statistics.median(ordered), "p95": rank(0.95), "p99": rank(0.99),
            "mean": statistics.fmean(ordered), "max": ordered[-1]}


def bleu_of(r: QAResult | Mapping[str, Any]) -> float:
    return score_bleu1(str(_get(r, "prediction") or ""), str(_get(r, "gold") or ""),
                       str(_get(r, "category")), bool(_get(r, "adversarial")))


def _mean_bleu(rs: Sequence[QAResult | Mapping[str, Any]]) -> float | None:
    return statistics.fmean(bleu_of(r) for r in rs) if rs else None


def extend_report(report: dict[str, Any], results: Sequence[QAResult | Mapping[str, Any]],
                  ) -> dict[str, Any]:
    """``report`` with BLEU-1 beside F1 in every block, iterations and the error split."""
    ok = [r for r in results if not _get(r, "error")]
    answerable = [r for r in ok if not _get(r, "adversarial")]
    report["overall"]["bleu1"] = _mean_bleu(answerable)
    report["overall_with_adversarial"]["bleu1"] = _mean_bleu(ok)
    for cat, block in report["by_category"].items():
        block["bleu1"] = _mean_bleu([r for r in ok if _get(r, "category") == cat])
    steps = [float((_get(r, "summary") or {}).get("steps", 0)) for r in ok]
    report["iterations"] = percentiles(steps)
    report["error_split"] = error_split(ok)
    # Answers given offline because the LLM failed (timeouts, budget, a broken endpoint).
    report["fallbacks"] = sum(1 for r in ok if _get(r, "fallback"))
    return report


def annotate(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each result (as JSON) with its BLEU-1 and error kind."""
    for r in results:
        r["bleu1"] = None if r.get("error") else bleu_of(r)
        r["error_kind"] = error_kind(r)
    return results


def _per_question(report: dict[str, Any], key: str) -> float | None:
    stats = (report.get("cost") or {}).get(key) or {}
    value = stats.get("mean")
    return float(value) if value is not None else None


def comparison_row(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """One system's line of the side-by-side table (answerable questions)."""
    o = report["overall"]
    online = _per_question(report, "online_usd")
    offline = _per_question(report, "offline_usd")
    split = report.get("error_split") or {}
    return {
        "system": name,
        "questions": o["n"],
        "judge_accuracy": o.get("judge_accuracy"),
        "judged": o.get("judged"),
        # Over every question, unanswerable ones included (LongMemEval's accuracy).
        "judge_accuracy_all": report["overall_with_adversarial"].get("judge_accuracy"),
        "f1": o.get("f1"),
        "bleu1": o.get("bleu1"),
        "precision": o.get("precision"),
        "coverage": o.get("coverage"),
        # LLM tokens spent answering (controller, notes, generator; no judge, no builds).
        "llm_tokens_per_question": _per_question(report, "online_tokens"),
        # Memory text read (the context given, for a baseline), estimated.
        "read_tokens_per_question": (report.get("mean_tokens", {}).get("memory") or {})
        .get("tokens_out"),
        "construction_tokens_per_question": _per_question(report, "offline_tokens"),
        "haystack_read": _per_question(report, "haystack_read"),
        "usd_per_question": (online or 0.0) + (offline or 0.0)
        if online is not None or offline is not None else None,
        "iterations_p50": (report.get("iterations") or {}).get("p50"),
        "retrieval_errors": split.get("retrieval"),
        "generation_errors": split.get("generation"),
        "fallbacks": report.get("fallbacks"),
        "errors": report.get("errors", 0),
    }


def side_by_side(system: dict[str, Any], baselines: Mapping[str, dict[str, Any]],
                 ) -> list[dict[str, Any]]:
    """The system's row, then each baseline's, from their reports."""
    return [comparison_row("system", system),
            *(comparison_row(name, rep) for name, rep in baselines.items())]
