"""Run a QA evaluation: ingest a benchmark, answer every question, score, aggregate.

Used by ``memstrata eval qa`` and by the benchmarks. A question that fails
(an LLM endpoint down after its retries, say) is recorded with its error and
the run goes on; the report counts errors separately.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memstrata.contract import Answer
from memstrata.controller.run import Controller
from memstrata.eval import judge as judging
from memstrata.eval.datasets import Dataset, Question
from memstrata.eval.cost import add_offline, answer_cost, cost_report, haystack_tokens
from memstrata.eval.qa import QAResult, aggregate, score
from memstrata.executor import RolloutExecutor, RolloutRequest
from memstrata.llm.construction import ConstructionMeter
from memstrata.llm.usage import PriceTable, RoleUsage
from memstrata.memory import Memory

if TYPE_CHECKING:
    from memstrata.llm.openai_compat import ChatClient

log = logging.getLogger(__name__)

#: ``progress(stage, done, total)``: stage is "ingest" (turns) or "answer" (questions).
Progress = Callable[[str, int, int], None]


@dataclass
class QARun:
    results: list[QAResult]
    report: dict[str, Any]
    ingest_seconds: float = 0.0
    answer_seconds: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)


def answer_one(controller: Controller, q: Question, judge_client: "ChatClient | None",
               ) -> QAResult:
    """Answer, score and (with a judge) grade one question."""
    try:
        a: Answer | BaseException = controller.answer(q.scope, q.question, q.asked_on)
    except Exception as exc:  # noqa: BLE001 - one failed question must not end a long run
        a = exc
    return score_answer(q, a, judge_client, prices=controller.prices)


def score_answer(q: Question, a: "Answer | BaseException", judge_client: "ChatClient | None",
                 *, prices: PriceTable | None = None) -> QAResult:
    """Score (and with a judge grade) one answer, or record the error it ended with.

    With ``prices`` the answer's cost is split into L1/L2 construction and answering
    (:func:`memstrata.eval.cost.answer_cost`)."""
    base: dict[str, Any] = dict(qid=q.qid, user=q.scope.user_id, category=q.category, question=q.question,
                gold=q.answer, adversarial=q.adversarial, gold_sessions=sorted(q.gold_sessions))
    if isinstance(a, BaseException):
        log.warning("question %s failed: %s", q.qid, a)
        return QAResult(prediction="", error=f"{type(a).__name__}: {a}", **base)
    f1, em = score(a.answer, q.answer, q.category, q.adversarial)
    result = QAResult(
        prediction=a.answer, abstained=a.abstained, f1=f1, em=em, fallback=a.fallback,
        source_sessions=list(dict.fromkeys(s.session_id for s in a.sources)),
        sources=[s.model_dump(mode="json") for s in a.sources],
        summary=a.summary.model_dump(mode="json"),
        cost=answer_cost(a, prices) if prices is not None else {}, **base)
    if judge_client is not None:
        try:
            v = judging.judge(judge_client, q.question, q.answer, a.answer, q.category,
                              q.adversarial)
            result.judge = v.correct
            result.judge_tokens = {"tokens_in": v.tokens_in, "tokens_out": v.tokens_out}
        except Exception as exc:  # noqa: BLE001 - a failed judge costs a verdict, not the run
            log.warning("judging %s failed: %s", q.qid, exc)
    return result


def evaluate_qa(dataset: Dataset, memory: Memory, controller: Controller, *,
                judge_client: "ChatClient | None" = None,
                progress: Progress | None = None,
                rollouts: RolloutExecutor | None = None) -> QARun:
    """Ingest, answer and score. ``rollouts`` answers the questions elsewhere (Ray actors
    in ``eval qa --workers N``); by default ``controller`` answers them one by one here."""
    t0 = time.perf_counter()
    total_turns = dataset.parsed.turns
    done = 0

    def ingested(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress("ingest", done, total_turns)

    built = ConstructionMeter(memory.meter)
    memory.ingest(built.track(dataset.parsed.sessions), progress=ingested)
    t1 = time.perf_counter()
    results: list[QAResult] = []
    if rollouts is not None:
        qs = dataset.questions
        answers = rollouts.answer_many(
            [RolloutRequest(q.scope, q.question, q.asked_on) for q in qs],
            progress=(lambda done, total: progress("answer", done, total)) if progress
            else None)
        results = [score_answer(q, a, judge_client, prices=controller.prices)
                   for q, a in zip(qs, answers)]
    for i, q in enumerate(dataset.questions if rollouts is None else (), start=1):
        results.append(answer_one(controller, q, judge_client))
        if progress:
            progress("answer", i, len(dataset.questions))
    t2 = time.perf_counter()
    _share_construction(results, dataset, built, controller.prices)
    report = aggregate(results)
    report["cost"] = cost_report([r.cost for r in results if r.error is None])
    report["ingest_seconds"] = round(t1 - t0, 2)
    report["answer_seconds"] = round(t2 - t1, 2)
    return QARun(results, report, t1 - t0, t2 - t1)


def _share_construction(results: list[QAResult], dataset: Dataset, built: ConstructionMeter,
                        prices: PriceTable) -> None:
    """Each question's offline cost: its user's ingest construction over the user's
    questions (plus the L1/L2 its answer built), and the share of the haystack read."""
    questions = Counter((q.scope.tenant_id, q.scope.user_id) for q in dataset.questions)
    haystack = haystack_tokens(dataset.parsed.sessions)
    per_user = built.by_user()
    model = built.only_model
    price = prices.price_for(model) if model is not None else None
    for q, r in zip(dataset.questions, results):
        if r.error is not None or not r.cost:
            continue
        key = (q.scope.tenant_id, q.scope.user_id)
        used = per_user.get(key, RoleUsage())
        usd = price.cost(used.prompt_tokens, used.completion_tokens) if price else 0.0
        r.cost = add_offline(r.cost, used, usd, questions[key], haystack.get(key, 0))
