"""Why an answer was wrong: retrieval or generation (APDMem's error split, Fig. 2c).

A wrong answer to an answerable question is a **retrieval error** when some of
its gold evidence sessions are not among what the system read, and a
**generation error** when it read all of them and still answered wrongly (or
abstained). Gold evidence is the LongMemEval ``answer_session_ids``, or the
sessions of the LoCoMo evidence ``dia_id``s (``D3:7`` is in session 3).

What a system "read" is taken from the stored result: the sessions it drilled
into (``summary.drill_depths``: read at L1, L2 or L3; a baseline records every
session its context held) and the sessions its answer cites. Search
summaries alone do not count as read. Right is :func:`memstrata.eval.qa.right`
(the judge's verdict where one graded the answer, else token F1 >= 0.5).
Adversarial (unanswerable) questions and failed questions are left out; a
wrong answer without gold evidence is counted as ``unknown``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memstrata.eval.qa import QAResult, right

ErrorKind = Literal["right", "retrieval", "generation", "unknown"]
KINDS: tuple[ErrorKind, ...] = ("right", "retrieval", "generation", "unknown")


def _get(r: QAResult | Mapping[str, Any], key: str) -> Any:
    return r.get(key) if isinstance(r, Mapping) else getattr(r, key)


def read_sessions(r: QAResult | Mapping[str, Any]) -> set[str]:
    """The sessions a result says its answer read: drilled ones and cited ones."""
    summary = _get(r, "summary") or {}
    drilled = summary.get("drill_depths") or {}
    return set(drilled) | set(_get(r, "source_sessions") or ())


def error_kind(r: QAResult | Mapping[str, Any]) -> ErrorKind | None:
    """right / retrieval / generation / unknown; None when the question is left out."""
    if _get(r, "error") or _get(r, "adversarial"):
        return None
    if right(r):  # type: ignore[arg-type]
        return "right"
    gold = set(_get(r, "gold_sessions") or ())
    if not gold:
        return "unknown"
    return "generation" if gold <= read_sessions(r) else "retrieval"


def _partial(r: QAResult | Mapping[str, Any]) -> bool:
    """A retrieval error that read some, not all, of the gold sessions."""
    gold = set(_get(r, "gold_sessions") or ())
    return bool(gold & read_sessions(r))


def _block(rs: Sequence[QAResult | Mapping[str, Any]]) -> dict[str, Any]:
    kinds = [(r, k) for r in rs if (k := error_kind(r)) is not None]
    counts: dict[str, int] = {k: sum(1 for _, x in kinds if x == k) for k in KINDS}
    wrong = counts["retrieval"] + counts["generation"]
    return {
        "questions": len(kinds),
        **counts,
        "retrieval_partial": sum(1 for r, k in kinds if k == "retrieval" and _partial(r)),
        # Shares of the wrong answers whose cause is known.
        "retrieval_share": counts["retrieval"] / wrong if wrong else None,
        "generation_share": counts["generation"] / wrong if wrong else None,
    }


def error_split(results: Sequence[QAResult | Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and shares of the error kinds, overall and per category."""
    by_cat: dict[str, list[QAResult | Mapping[str, Any]]] = defaultdict(list)
    for r in results:
        by_cat[str(_get(r, "category"))].append(r)
    out = _block(results)
    out["by_category"] = {c: _block(rs) for c, rs in sorted(by_cat.items())}
    return out
