"""Question-answering metrics and the report of a QA run.

Token F1 and exact match follow LoCoMo's scorer: answers are lower-cased,
commas and other punctuation removed, the words "a", "an", "the" and "and"
dropped, and whitespace collapsed (LoCoMo also applies a Porter stemmer; this
does not, so its F1 can be slightly lower than the official script's).
Per category, as LoCoMo does it: multi-hop answers are lists, so each gold
item takes its best match among the predicted items and the item scores are
averaged; open-domain gold answers keep only the part before ";"; an
adversarial question (its answer is not in the conversation) scores 1 when
the prediction abstains and 0 otherwise.

The report adds APDMem's behaviour metrics: the depth distribution (the
share of drilled sessions whose deepest read was L1, L2 or L3), sessions
drilled and their share of the haystack, steps, tokens per role and cost.
"""

from __future__ import annotations

import re
import statistics
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memstrata.synth.answer import is_abstention

_ARTICLES = re.compile(r"\b(?:a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "‘’“”")
DEPTHS = ("L1", "L2", "L3")


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation (without stemming)."""
    s = str(text).replace(",", "").lower()
    s = s.translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def token_f1(prediction: str, gold: str) -> float:
    p = normalize_answer(prediction).split()
    g = normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _items(text: str) -> list[str]:
    return [x.strip() for x in str(text).split(",") if x.strip()] or [str(text)]


def multi_f1(prediction: str, gold: str) -> float:
    """Each gold item's best F1 against the predicted items, averaged."""
    preds = _items(prediction)
    return statistics.fmean(max(token_f1(p, g) for p in preds) for g in _items(gold))


def score(prediction: str, gold: str, category: str, adversarial: bool = False,
          ) -> tuple[float, float]:
    """(F1, exact match) the way LoCoMo scores this category."""
    if adversarial or category == "adversarial":
        hit = float(is_abstention(prediction))
        return hit, hit
    if category == "open-domain":
        gold = gold.split(";")[0].strip()
    if category == "multi-hop":
        return multi_f1(prediction, gold), exact_match(prediction, gold)
    return token_f1(prediction, gold), exact_match(prediction, gold)


# -- per-question records and the run report ------------------------------------------------


class QAResult(BaseModel):
    """One answered question, scored, with its trace summary."""

    qid: str
    user: str
    category: str
    question: str
    gold: str
    prediction: str
    abstained: bool = False
    adversarial: bool = False
    f1: float = 0.0
    em: float = 0.0
    judge: bool | None = None
    judge_tokens: dict[str, int] = Field(default_factory=dict)
    gold_sessions: list[str] = Field(default_factory=list)
    source_sessions: list[str] = Field(default_factory=list)
    sources: list[dict[str, Any]] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    #: Offline (construction) and online cost of this question, and the share of the
    #: haystack it read (:mod:`memstrata.eval.cost`).
    cost: dict[str, Any] = Field(default_factory=dict)
    #: Set when an LLM was configured but failed and the answer was given offline
    #: (``Answer.fallback``, e.g. ``generator: timeout``).
    fallback: str | None = None
    error: str | None = None


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


#: An answer counts as right for precision when its token F1 reaches this (or when the
#: judge says so, where one graded it).
RIGHT_F1 = 0.5


def answered(r: QAResult | dict[str, Any]) -> bool:
    """Did the system give an answer (not an abstention, not an error)?"""
    get = r.get if isinstance(r, dict) else lambda k: getattr(r, k)
    if get("error"):
        return False
    return not (get("abstained") or is_abstention(str(get("prediction") or "")))


def right(r: QAResult | dict[str, Any]) -> bool:
    """An answer that is right: the judge's verdict, else token F1 >= :data:`RIGHT_F1`.

    An answer to an unanswerable (adversarial) question is never right.
    """
    get = r.get if isinstance(r, dict) else lambda k: getattr(r, k)
    if not answered(r) or get("adversarial"):
        return False
    verdict = get("judge")
    if verdict is not None:
        return bool(verdict)
    return float(get("f1") or 0.0) >= RIGHT_F1


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _block(rs: Sequence[QAResult]) -> dict[str, Any]:
    judged = [r.judge for r in rs if r.judge is not None]
    answerable = [r for r in rs if not r.adversarial]
    unanswerable = [r for r in rs if r.adversarial]
    n_answered = sum(1 for r in rs if answered(r))
    n_right = sum(1 for r in rs if right(r))
    return {
        "n": len(rs),
        "f1": _mean(r.f1 for r in rs),
        "em": _mean(r.em for r in rs),
        "judge_accuracy": (sum(judged) / len(judged)) if judged else None,
        "judged": len(judged),
        # Precision: right / answered (an answer to an unanswerable question is wrong);
        # coverage: answered / answerable; false answers: answered / unanswerable.
        "answered": n_answered,
        "right": n_right,
        "precision": _ratio(n_right, n_answered),
        "coverage": _ratio(sum(1 for r in answerable if answered(r)), len(answerable)),
        "false_answers": _ratio(sum(1 for r in unanswerable if answered(r)),
                                len(unanswerable)),
    }


def depth_counts(results: Iterable[QAResult]) -> Counter[str]:
    """How many drilled sessions ended at each layer (over all questions)."""
    counts: Counter[str] = Counter()
    for r in results:
        for layer in (r.summary.get("drill_depths") or {}).values():
            counts[f"L{int(layer)}"] += 1
    return counts


def _shares(counts: Counter[str]) -> dict[str, float]:
    total = sum(counts[d] for d in DEPTHS)
    return {d: (counts[d] / total if total else 0.0) for d in DEPTHS}


def aggregate(results: Sequence[QAResult]) -> dict[str, Any]:
    """The run's numbers: answer quality per category and the disclosure behaviour."""
    ok = [r for r in results if r.error is None]
    answerable = [r for r in ok if not r.adversarial]
    by_cat: dict[str, list[QAResult]] = defaultdict(list)
    for r in ok:
        by_cat[r.category].append(r)
    counts = depth_counts(ok)
    summaries = [r.summary for r in ok]
    tokens: dict[str, dict[str, float]] = {}
    for role in sorted({k for s in summaries for k in (s.get("tokens") or {})}):
        per = [(s.get("tokens") or {}).get(role) or {} for s in summaries]
        tokens[role] = {"tokens_in": _mean(p.get("tokens_in", 0) for p in per) or 0.0,
                        "tokens_out": _mean(p.get("tokens_out", 0) for p in per) or 0.0,
                        "estimated": any(p.get("estimated") for p in per)}
    judge_in = sum(r.judge_tokens.get("tokens_in", 0) for r in ok)
    if any(r.judge_tokens for r in ok):
        tokens["judge"] = {"tokens_in": judge_in / max(1, len(ok)),
                           "tokens_out": sum(r.judge_tokens.get("tokens_out", 0) for r in ok)
                           / max(1, len(ok)), "estimated": False}
    total_ms = [float(s.get("ms_total", 0.0)) for s in summaries]
    overhead = [max(0.0, float(s.get("ms_total", 0.0)) - float(s.get("ms_llm", 0.0))
                    - float(s.get("ms_memory", 0.0))) for s in summaries]
    cpu = [max(0.0, float(s.get("cpu_ms_total", 0.0)) - float(s.get("cpu_ms_memory", 0.0)))
           for s in summaries]
    with_gold = [r for r in answerable if r.gold_sessions and r.source_sessions]
    return {
        "questions": len(results),
        "errors": len(results) - len(ok),
        "overall": _block(answerable),
        "overall_with_adversarial": _block(ok),
        "by_category": {c: _block(rs) for c, rs in sorted(by_cat.items())},
        "depth_distribution": _shares(counts),
        "drills": sum(counts[d] for d in DEPTHS),
        "depth_by_category": {c: _shares(depth_counts(rs)) for c, rs in sorted(by_cat.items())},
        # The profiles: a cross-session layer read before the sessions (not a drill).
        "profile_read_share": _mean(1.0 if s.get("profiles_read") else 0.0 for s in summaries),
        "profile_read_by_category": {c: _mean(1.0 if r.summary.get("profiles_read") else 0.0
                                              for r in rs) for c, rs in sorted(by_cat.items())},
        "mean_sessions_drilled": _mean(s.get("sessions_drilled", 0) for s in summaries),
        "mean_haystack_sessions": _mean(s.get("haystack_sessions", 0) for s in summaries),
        "mean_drilled_share": _mean(s.get("drilled_share", 0.0) for s in summaries),
        "mean_steps": _mean(s.get("steps", 0) for s in summaries),
        "mean_llm_calls": _mean(s.get("llm_calls", 0) for s in summaries),
        "mean_tool_errors": _mean(s.get("tool_errors", 0) for s in summaries),
        "mean_tokens": tokens,
        "mean_cost_usd": _mean(s.get("cost_usd", 0.0) for s in summaries),
        "total_cost_usd": sum(float(s.get("cost_usd", 0.0)) for s in summaries),
        "latency_ms": {"p50": _pct(total_ms, 0.5), "p99": _pct(total_ms, 0.99),
                       "mean": _mean(total_ms)},
        "overhead_ms": {"p50": _pct(overhead, 0.5), "p99": _pct(overhead, 0.99)},
        "overhead_cpu_ms": {"p50": _pct(cpu, 0.5), "p99": _pct(cpu, 0.99)},
        "source_in_gold_sessions": (sum(1 for r in with_gold
                                        if set(r.source_sessions) & set(r.gold_sessions))
                                    / len(with_gold)) if with_gold else None,
        "stop_reasons": dict(Counter(str(s.get("stop_reason")) for s in summaries)),
    }


def plot_depth(report: dict[str, Any], path: Path, title: str = "") -> Path:
    """Bar charts of the depth distribution, overall and per category, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    overall = report["depth_distribution"]
    cats = report.get("depth_by_category") or {}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 2]})
    colors = ["#4C72B0", "#DD8452", "#C44E52"]
    ax1.bar(DEPTHS, [overall[d] * 100 for d in DEPTHS], color=colors)
    for i, d in enumerate(DEPTHS):
        ax1.text(i, overall[d] * 100 + 1, f"{overall[d] * 100:.1f}%", ha="center")
    ax1.set_ylim(0, 110)
    ax1.set_ylabel("% of drilled sessions")
    ax1.set_title(f"Deepest layer per drill (n={report.get('drills', 0)})")
    names = list(cats)
    bottom = [0.0] * len(names)
    for d, color in zip(DEPTHS, colors):
        vals = [cats[c][d] * 100 for c in names]
        ax2.bar(names, vals, bottom=bottom, color=color, label=d)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax2.set_ylim(0, 100)
    ax2.set_title("By category")
    ax2.legend(loc="upper right", fontsize=8)
    ax2.tick_params(axis="x", labelrotation=20)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def compare_runs(results: Sequence[dict[str, Any]],
                 previous: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """F1 of this run minus an earlier run's, per category and overall, paired by question.

    Both are the ``results`` lists of ``eval qa`` files over the same dataset;
    each entry has the mean difference, its bootstrap 95% interval and how many
    questions got better and worse (:func:`memstrata.eval.metrics.paired_difference`).
    """
    from memstrata.eval.metrics import paired_difference

    before = {r["qid"]: r for r in previous}
    if set(before) != {r["qid"] for r in results}:
        raise ValueError("previous result: its questions differ from this run's "
                         "(another dataset or --limit?)")
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in results:
        old = before[r["qid"]]
        if r.get("f1") is None or old.get("f1") is None:
            continue
        pairs[r["category"]].append((r["f1"], old["f1"]))
        pairs["overall (all)"].append((r["f1"], old["f1"]))
        if not r.get("adversarial"):
            pairs["overall (no adversarial)"].append((r["f1"], old["f1"]))
    return {name: paired_difference([a for a, _ in ps], [b for _, b in ps])
            for name, ps in sorted(pairs.items())}


def compare_rates(results: Sequence[dict[str, Any]], previous: Sequence[dict[str, Any]],
                  ) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """Precision and coverage of this run minus an earlier run's, paired by question.

    Per category and overall, like :func:`compare_runs`; precision is right over
    answered (:func:`right`, :func:`answered`), coverage answered over
    answerable, each with a paired bootstrap 95% interval
    (:func:`memstrata.eval.metrics.paired_ratio_difference`) and counts of the
    questions that became right / stopped being right, answered / abstained.
    """
    from memstrata.eval.metrics import paired_ratio_difference

    before = {r["qid"]: r for r in previous}
    if set(before) != {r["qid"] for r in results}:
        raise ValueError("previous result: its questions differ from this run's "
                         "(another dataset or --limit?)")
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for r in results:
        pair = (r, before[r["qid"]])
        groups[r["category"]].append(pair)
        groups["overall (all)"].append(pair)
        if not r.get("adversarial"):
            groups["overall (no adversarial)"].append(pair)
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    for name, pairs in sorted(groups.items()):
        new_ok = [int(right(a)) for a, _ in pairs]
        old_ok = [int(right(b)) for _, b in pairs]
        new_ans = [int(answered(a)) for a, _ in pairs]
        old_ans = [int(answered(b)) for _, b in pairs]
        can = [int(not a.get("adversarial")) for a, _ in pairs]
        precision = paired_ratio_difference(new_ok, new_ans, old_ok, old_ans)
        precision.update(now=_ratio(sum(new_ok), sum(new_ans)),
                         before=_ratio(sum(old_ok), sum(old_ans)),
                         gained=sum(1 for a, b in zip(new_ok, old_ok) if a > b),
                         lost=sum(1 for a, b in zip(new_ok, old_ok) if a < b))
        new_cov = [x * c for x, c in zip(new_ans, can)]
        old_cov = [x * c for x, c in zip(old_ans, can)]
        coverage = paired_ratio_difference(new_cov, can, old_cov, can)
        coverage.update(now=_ratio(sum(new_cov), sum(can)), before=_ratio(sum(old_cov), sum(can)),
                        gained=sum(1 for a, b in zip(new_cov, old_cov) if a > b),
                        lost=sum(1 for a, b in zip(new_cov, old_cov) if a < b))
        out[name] = {"precision": precision, "coverage": coverage}
    return out
