"""The papers' two QA baselines: full context and L3-only RAG, with the system's generator.

Both answer the same questions as the system, with the same answer step, so
the comparison differs only in what the generator is given:

* ``full-context``: the whole haystack of the question's user (every raw
  session, in date order, rendered as the system renders an L3 read), cut to
  :attr:`BaselineSettings.context_tokens` estimated tokens by dropping the
  oldest turns first (questions are asked after the history, and the latest
  state is what knowledge-update questions ask for);
* ``rag-l3``: the :attr:`BaselineSettings.rag_turns` raw turns that the
  retriever's stack ranks best for the question, over raw turns only: BM25
  (tantivy) and dense cosine (the same encoder, Qdrant Edge) fused by the
  system's unit rules (``MEMSTRATA_FUSION``, coverage weighting, the dense
  skip); no L0 summaries, no session-level rules, no hierarchy.

With an LLM the context goes to the generator role with the system's answer
prompt (no controller, no notes, no draft); offline, or when the LLM fails
(marked in ``fallback``, as the system marks it), the extractive answer step
quotes the best span of the same context. Each baseline answer is an
:class:`~memstrata.contract.Answer` with a trace (one ``context`` read, the
generator call) and is scored by the same code as the system's.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memstrata.contract import Answer, SourceRef, TraceSummary
from memstrata.eval.cost import add_offline, cost_report
from memstrata.eval.datasets import Dataset, Question
from memstrata.eval.qa import QAResult, aggregate
from memstrata.eval.retrieval import RawTurnIndex
from memstrata.evidence import lexical, lines as evlines
from memstrata.evidence.cues import detect_cues
from memstrata.evidence.lines import EvidenceLine
from memstrata.evidence.trace import Trace
from memstrata.layers import markdown as md
from memstrata.llm.budget import AnswerBudget, within
from memstrata.llm.types import LLMError
from memstrata.llm.usage import PriceTable, RoleUsage
from memstrata.model import Layer, Scope, Session, SessionMeta, Turn
from memstrata.retrieval import fusion
from memstrata.retrieval.hybrid import RetrievalParams
from memstrata.synth.answer import ExtractiveAnswer, Generated, LLMAnswer
from memstrata.text.terms import content_stems, stems

if TYPE_CHECKING:
    from memstrata.embed.types import Embedder
    from memstrata.llm.openai_compat import ChatClient
    from memstrata.memory import Memory

log = logging.getLogger(__name__)

FULL_CONTEXT = "full-context"
RAG_L3 = "rag-l3"
BASELINES = (FULL_CONTEXT, RAG_L3)
#: Mode names of a baseline answer (as ``Answer.mode``).
LLM_MODE, OFFLINE_MODE = "llm", "offline-extractive"


class BaselineSettings(BaseModel):
    """How much each baseline gives the generator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Full context: the user's haystack is cut to this many estimated tokens (oldest out).
    context_tokens: int = Field(32_000, ge=256, le=2_000_000)
    #: L3-only RAG: this many raw turns, best first.
    rag_turns: int = Field(10, ge=1, le=200)
    #: L3-only RAG: candidates each side (BM25, dense) brings to the fusion.
    rag_candidates: int = Field(100, ge=1, le=1000)


def parse_baselines(text: str | None) -> list[str]:
    """``"full-context,rag-l3"`` -> the names, checked; ``""``/None -> none."""
    names = [x.strip().lower() for x in (text or "").split(",") if x.strip()]
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baseline {unknown[0]!r}; expected a comma-separated list "
                         f"of {', '.join(BASELINES)}")
    return list(dict.fromkeys(names))


# -- contexts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What a baseline gives the generator for one question: whole or partial sessions."""

    sessions: list[tuple[SessionMeta, list[Turn]]]
    tokens: int
    truncated: bool = False

    def text(self) -> str:
        return "\n".join(md.render_l3(meta, turns) for meta, turns in self.sessions)

    @property
    def session_ids(self) -> list[str]:
        return [meta.session_id for meta, _ in self.sessions]


def _date_key(s: Session | SessionMeta) -> tuple[bool, Any, str]:
    meta = s.meta if isinstance(s, Session) else s
    return (meta.session_date is None, meta.session_date, meta.session_id)


def haystacks(sessions: Iterable[Session]) -> dict[Scope, list[Session]]:
    """Every user's sessions in date order."""
    by_user: dict[Scope, list[Session]] = defaultdict(list)
    for s in sessions:
        by_user[s.scope].append(s)
    return {scope: sorted(ss, key=_date_key) for scope, ss in by_user.items()}


def _tokens(meta: SessionMeta, turns: Sequence[Turn]) -> int:
    return lexical.estimate_tokens(md.render_l3(meta, turns))


def full_context(sessions: Sequence[Session], budget: int) -> Context:
    """The sessions (date order) within ``budget`` estimated tokens, the latest turns kept."""
    kept: list[tuple[SessionMeta, list[Turn]]] = []
    used, truncated = 0, False
    for s in reversed(sessions):
        if not s.turns:
            continue
        cost = _tokens(s.meta, s.turns)
        if used + cost <= budget:
            kept.append((s.meta, list(s.turns)))
            used += cost
            continue
        truncated = True
        # The latest turns of this session that still fit, then nothing older.
        for n in range(len(s.turns) - 1, 0, -1):
            part = list(s.turns[-n:])
            cost = _tokens(s.meta, part)
            if used + cost <= budget:
                kept.append((s.meta, part))
                used += cost
                break
        break
    kept.reverse()
    return Context(kept, used, truncated)


class RawTurnRetriever:
    """BM25 and dense cosine over raw turns, fused by the system's unit-level rules."""

    def __init__(self, root: Path, embedder: "Embedder", params: RetrievalParams,
                 candidates: int = 100) -> None:
        self.index = RawTurnIndex(root, embedder)
        self.embedder = embedder
        self.params = params
        self.candidates = candidates
        self._turns: dict[str, tuple[SessionMeta, Turn]] = {}

    def build(self, sessions: Sequence[Session],
              progress: Callable[[int], None] | None = None) -> None:
        for s in sessions:
            for t in s.turns:
                self._turns[s.meta.record_id("raw", t.index, t.index)] = (s.meta, t)
        self.index.build(sessions, progress=progress)

    def close(self) -> None:
        self.index.close()

    def top(self, scope: Scope, question: str, k: int) -> list[tuple[SessionMeta, Turn]]:
        """The ``k`` best raw turns of ``scope`` for ``question``, best first."""
        p = self.params
        query = question[: p.max_query_chars]
        lex = self.index.lexical.search(scope, query, self.candidates)
        wanted = content_stems(query)
        best = self._turns.get(lex[0].unit_id) if lex else None
        cov = fusion.coverage(wanted, stems(best[1].text()) if best else ())
        skip = p.dense_skip_coverage is not None and bool(wanted) and \
            cov >= p.dense_skip_coverage
        dense = [] if skip else self.index.vectors.search(
            scope, self.embedder.embed_query(query), self.candidates)
        weights = fusion.coverage_weights(p.dense_weight, cov) if p.coverage_weighting \
            else p.weights
        if skip:
            weights = {"lexical": 1.0, "dense": 0.0}
        if p.fusion == "rrf":
            scores = fusion.rrf({"lexical": [h.unit_id for h in lex],
                                 "dense": [h.unit_id for h in dense]}, p.rrf_k, weights)
        else:
            scores = fusion.weighted_sum(
                {"lexical": fusion.dbsf([(h.unit_id, h.score) for h in lex]),
                 "dense": fusion.dbsf([(h.unit_id, h.score) for h in dense])}, weights)
        return [self._turns[uid] for uid, _ in fusion.top_k(scores, len(scores))
                if uid in self._turns][:k]


def rag_context(hits: Sequence[tuple[SessionMeta, Turn]]) -> Context:
    """Retrieved turns grouped by session, sessions in date order, turns in order."""
    by_session: dict[str, tuple[SessionMeta, list[Turn]]] = {}
    for meta, turn in hits:
        by_session.setdefault(meta.session_id, (meta, []))[1].append(turn)
    groups = sorted(by_session.values(), key=lambda g: _date_key(g[0]))
    sessions = [(meta, sorted(turns, key=lambda t: t.index)) for meta, turns in groups]
    return Context(sessions, sum(_tokens(m, ts) for m, ts in sessions))


# -- answering over a context ---------------------------------------------------------------


def participants(sessions: Iterable[Session]) -> tuple[str, ...]:
    """Who talks in these sessions, in order of first appearance."""
    return tuple(dict.fromkeys(m.who for s in sessions for t in s.turns for m in t.messages))


def _source(line: EvidenceLine) -> SourceRef:
    text = line.shown if not line.speaker else f"{line.speaker}: {line.shown}"
    return SourceRef(session_id=line.session_id, session_date=line.session_date,
                     layer=line.layer, turn_index=line.turn_index, text=text,
                     source_ids=list(line.source_ids))


class ContextAnswerer:
    """The system's answer step over a baseline's context (LLM generator, or extractive)."""

    def __init__(self, chat: "ChatClient | None", prices: PriceTable,
                 budget_s: float | None = None) -> None:
        self.chat = chat
        self.prices = prices
        self.budget_s = budget_s

    def answer(self, name: str, q: Question, ctx: Context, people: Sequence[str],
               haystack_sessions: int) -> Answer:
        trace = Trace()
        cues = detect_cues(q.question, q.asked_on, people)
        found = [ln for meta, turns in ctx.sessions
                 for ln in evlines.raw_lines(meta.session_id, meta.session_date, turns, people)]
        sids = ctx.session_ids
        trace.add(1, "context", sessions=sids, layer=Layer.L3, tokens_out=ctx.tokens,
                  arguments={"baseline": name, "truncated": ctx.truncated},
                  note=f"{sum(len(t) for _, t in ctx.sessions)} raw turns")
        fallback = None
        text = ctx.text() if self.chat is not None else ""
        generated: Generated | None = None
        if self.chat is not None:
            try:
                with within(AnswerBudget(self.budget_s)):
                    generated = LLMAnswer(self.chat).generate(cues, None, found, text, None,
                                                              q.asked_on, trace, 2)
            except LLMError as exc:
                fallback = f"{exc.role or 'generator'}: {exc.reason}"
                log.warning("%s baseline: LLM failed on %s (%s); answering offline",
                            name, q.qid, fallback)
        if generated is None:
            generated = ExtractiveAnswer().generate(cues, None, found, "", None, q.asked_on,
                                                    trace, 2)
        trace.add(2, "answer", sessions=list(dict.fromkeys(ln.session_id
                                                           for ln in generated.sources)),
                  note="abstained" if generated.abstained else None)
        trace.finish()
        cost, unpriced = trace.cost(self.prices)
        summary = TraceSummary(
            policy=name, drill_depths={sid: Layer.L3 for sid in sids},
            deepest_layer=Layer.L3 if sids else None, sessions_drilled=len(sids),
            haystack_sessions=haystack_sessions,
            drilled_share=len(sids) / haystack_sessions if haystack_sessions else 0.0,
            steps=1, llm_calls=len(trace.llm_calls), tool_calls=1, stop_reason=name,
            tokens=trace.tokens_by_role(), cost_usd=round(cost, 8), unpriced_models=unpriced,
            ms_total=round(trace.ms_total, 3), ms_llm=round(trace.ms_llm, 3),
            cpu_ms_total=round(trace.cpu_ms_total, 3))
        llm = self.chat is not None and fallback is None
        return Answer(question=q.question, asked_on=q.asked_on, answer=generated.answer,
                      abstained=generated.abstained, mode=LLM_MODE if llm else OFFLINE_MODE,
                      fallback=fallback, sources=[_source(ln) for ln in generated.sources[:3]],
                      reasoning=generated.reasoning, steps=trace.steps, summary=summary)


# -- running them ----------------------------------------------------------------------------


@dataclass
class BaselineRun:
    name: str
    results: list[QAResult]
    report: dict[str, Any]
    seconds: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)


Progress = Callable[[str, int, int], None]
#: ``score(question, answer or error)``: how the runner scores an answer (the system's
#: :func:`memstrata.eval.qa_run.score_answer` with the run's judge and prices).
Scorer = Callable[[Question, "Answer | BaseException"], QAResult]


def run_baselines(dataset: Dataset, memory: "Memory", names: Sequence[str], score: Scorer, *,
                  chat: "ChatClient | None", prices: PriceTable,
                  settings: BaselineSettings | None = None, budget_s: float | None = None,
                  progress: Progress | None = None,
                  work_dir: Path | None = None) -> dict[str, BaselineRun]:
    """Answer every question of ``dataset`` with each named baseline, scored by ``score``.

    ``memory`` lends its encoder and retrieval settings to ``rag-l3`` (its raw-turn
    index is built apart, in ``work_dir`` or a temporary folder).
    """
    settings = settings or BaselineSettings()
    answerer = ContextAnswerer(chat, prices, budget_s)
    stacks = haystacks(dataset.parsed.sessions)
    people = {scope: participants(ss) for scope, ss in stacks.items()}
    haystack_tok = {scope: sum(_tokens(s.meta, s.turns) for s in ss)
                    for scope, ss in stacks.items()}
    out: dict[str, BaselineRun] = {}
    with tempfile.TemporaryDirectory(prefix="memstrata-rag-") as tmp:
        retriever: RawTurnRetriever | None = None
        try:
            if RAG_L3 in names:
                retriever = RawTurnRetriever(work_dir or Path(tmp), memory.embedder,
                                             RetrievalParams.from_settings(memory.settings),
                                             settings.rag_candidates)
                done = 0

                def built(n: int) -> None:
                    nonlocal done
                    done += n
                    if progress:
                        progress("rag index", done, dataset.parsed.turns)

                retriever.build(dataset.parsed.sessions, progress=built)
            for name in names:
                t0 = time.perf_counter()
                results: list[QAResult] = []
                for i, q in enumerate(dataset.questions, start=1):
                    stack = stacks.get(q.scope, [])
                    try:
                        if name == FULL_CONTEXT:
                            ctx = full_context(stack, settings.context_tokens)
                        else:
                            assert retriever is not None
                            ctx = rag_context(retriever.top(q.scope, q.question,
                                                            settings.rag_turns))
                        a: Answer | BaseException = answerer.answer(
                            name, q, ctx, people.get(q.scope, ()), len(stack))
                    except Exception as exc:  # noqa: BLE001 - one failed question must not end the run
                        a = exc
                    r = score(q, a)
                    if r.error is None and r.cost:
                        # Raw turns need no construction: the offline cost is 0.
                        r.cost = add_offline(r.cost, RoleUsage(), 0.0, 1,
                                             haystack_tok.get(q.scope, 0))
                    results.append(r)
                    if progress:
                        progress(name, i, len(dataset.questions))
                report = aggregate(results)
                report["cost"] = cost_report([r.cost for r in results if r.error is None])
                report["answer_seconds"] = round(time.perf_counter() - t0, 2)
                out[name] = BaselineRun(name, results, report, time.perf_counter() - t0,
                                        config=settings.model_dump())
        finally:
            if retriever is not None:
                retriever.close()
    return out
