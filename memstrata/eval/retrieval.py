"""Retrieval evaluation: the hybrid L0 retriever against raw-turn baselines.

All three systems run in one process on the same data: the dataset is ingested
into a fresh embedded store, and the baselines index the same raw turns (one
document per turn) with BM25 (tantivy) and with dense cosine over the same
encoder. A session is ranked by its best turn in every system, so the numbers
differ only by what is indexed and how it is fused.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memstrata.config import Settings
from memstrata.embed.types import Embedder
from memstrata.evidence.cues import detect_cues
from memstrata.eval.datasets import Dataset, Question
from memstrata.eval.metrics import (
    covered_recall_at_k,
    mean,
    ndcg_at_k,
    paired_difference,
    recall_at_k,
)
from memstrata.memory import Memory
from memstrata.model import Session
from memstrata.route_plan import RoutePlan
from memstrata.store.qdrant_edge import QdrantEdgeVectorStore
from memstrata.store.tantivy_store import TantivyLexicalStore
from memstrata.store.types import Hit, LexicalDoc, VectorRecord

#: How deep each system ranks (enough for the largest k and the recall curve).
RANK_DEPTH = 50


@dataclass(frozen=True, slots=True)
class Ranked:
    """One system's answer to one question: sessions and turns, best first."""

    sessions: list[str]
    #: Each ranked turn as the source message ids it holds (LoCoMo ``dia_id``s).
    turns: list[list[str]]


class Ranker(Protocol):
    name: str

    def rank(self, q: Question) -> Ranked: ...


class HybridRanker:
    """The system under test: :class:`~memstrata.retrieval.hybrid.HybridRetriever`."""

    name = "system"

    def __init__(self, memory: Memory, *, graph: bool = False, match: bool = False) -> None:
        self.memory = memory
        #: Expand through the relation graph when the question's cues ask for it (as the
        #: answer path's ``use_graph``: off unless asked for).
        self.graph = graph
        #: Lift the sessions of the named entities' closest bullets (``use_profile_match``).
        self.match = match

    def rank(self, q: Question) -> Ranked:
        route = RoutePlan.for_question(q.question, detect_cues(q.question), enabled=self.graph,
                                       match=self.match)
        r = self.memory.retriever.rank(q.scope, [q.question], route=route)
        return Ranked(sessions=[s for s, _ in r.sessions[:RANK_DEPTH]],
                      turns=[u.source_ids for u in r.units[:RANK_DEPTH]])


def _sessions_by_best_turn(hits: Sequence[Hit]) -> list[str]:
    seen: dict[str, None] = {}
    for h in hits:
        seen.setdefault(h.session_id, None)
    return list(seen)


class RawTurnIndex:
    """Both baselines' indexes: every raw turn as one document and one vector."""

    def __init__(self, root: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.lexical = TantivyLexicalStore(root / "raw-bm25")
        self.vectors = QdrantEdgeVectorStore(root / "raw-dense", embedder.dim)
        self.sources: dict[str, list[str]] = {}

    def build(self, sessions: Iterable[Session], progress: Callable[[int], None] | None = None,
              batch: int = 256) -> None:
        docs: list[LexicalDoc] = []
        for s in sessions:
            for t in s.turns:
                uid = s.meta.record_id("raw", t.index, t.index)
                self.sources[uid] = t.source_ids
                docs.append(LexicalDoc(id=uid, scope=s.scope, session_id=s.session_id,
                                       turn_index=t.index, text=t.text()))
        for i in range(0, len(docs), batch):
            chunk = docs[i : i + batch]
            vecs = self.embedder.embed_documents([d.text for d in chunk])
            self.lexical.upsert(chunk)
            self.vectors.upsert([
                VectorRecord(id=d.id, scope=d.scope, session_id=d.session_id,
                             turn_index=d.turn_index, vector=v) for d, v in zip(chunk, vecs)
            ])
            if progress:
                progress(len(chunk))
        self.lexical.flush()
        self.vectors.flush()

    def close(self) -> None:
        self.lexical.close()
        self.vectors.close()


class BM25RawRanker:
    name = "bm25_raw"

    def __init__(self, index: RawTurnIndex) -> None:
        self.index = index

    def rank(self, q: Question) -> Ranked:
        hits = self.index.lexical.search(q.scope, q.question, 200)
        return Ranked(sessions=_sessions_by_best_turn(hits)[:RANK_DEPTH],
                      turns=[self.index.sources.get(h.unit_id, []) for h in hits[:RANK_DEPTH]])


class DenseRawRanker:
    name = "dense_raw"

    def __init__(self, index: RawTurnIndex) -> None:
        self.index = index

    def rank(self, q: Question) -> Ranked:
        vec = self.index.embedder.embed_query(q.question)
        hits = self.index.vectors.search(q.scope, vec, 200)
        return Ranked(sessions=_sessions_by_best_turn(hits)[:RANK_DEPTH],
                      turns=[self.index.sources.get(h.unit_id, []) for h in hits[:RANK_DEPTH]])


def score_question(q: Question, r: Ranked, ks: Sequence[int], turn_level: bool) -> dict[str, float]:
    """Every metric of one question (undefined ones left out)."""
    out: dict[str, float] = {}
    for k in ks:
        for name, value in (
            (f"session_recall@{k}", recall_at_k(r.sessions, q.gold_sessions, k)),
            (f"ndcg@{k}", ndcg_at_k(r.sessions, q.gold_sessions, k)),
            (f"turn_recall@{k}",
             covered_recall_at_k(r.turns, q.gold_evidence, k) if turn_level else None),
        ):
            if value is not None:
                out[name] = value
    return out


def aggregate(rows: Sequence[tuple[Question, dict[str, float]]]) -> dict[str, Any]:
    """Overall means (adversarial questions apart), by category, and the adversarial set alone."""

    def means(subset: Sequence[dict[str, float]]) -> dict[str, Any]:
        keys = sorted({k for m in subset for k in m})
        res: dict[str, Any] = {k: mean([m.get(k) for m in subset]) for k in keys}
        res["questions"] = len(subset)
        return res

    main = [m for q, m in rows if not q.adversarial]
    by_cat: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q, m in rows:
        by_cat[q.category].append(m)
    out = means(main)
    out["by_category"] = {c: means(v) for c, v in sorted(by_cat.items())}
    adversarial = [m for q, m in rows if q.adversarial]
    if adversarial:
        out["adversarial"] = means(adversarial)
    return out


def recall_curve(rows: Sequence[tuple[Question, Ranked]], depth: int = 20) -> list[float]:
    """Mean session recall at k = 1..depth over the non-adversarial questions."""
    curve = []
    for k in range(1, depth + 1):
        curve.append(mean([recall_at_k(r.sessions, q.gold_sessions, k)
                           for q, r in rows if not q.adversarial]) or 0.0)
    return curve


@dataclass
class EvalRun:
    """The whole evaluation's output, ready to be written as JSON."""

    result: dict[str, Any]
    curves: dict[str, list[float]]


def evaluate(
    dataset: Dataset,
    ks: Sequence[int],
    settings: Settings,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    work_dir: Path | None = None,
    graph: bool = False,
    match: bool = False,
) -> EvalRun:
    """Ingest, build baselines, ask every question of every system, and score.

    ``progress(stage, done, total)`` is called as work advances; ``graph=True``
    expands searches through the relation graph (the controller's opt-in ``use_graph``),
    ``match=True`` lifts the named entities' closest bullets' sessions (``use_profile_match``).
    """
    tick = progress or (lambda stage, done, total: None)
    turn_level = dataset.format == "locomo"
    with tempfile.TemporaryDirectory(prefix="memstrata-eval-") as tmp:
        root = work_dir or Path(tmp)
        memory = Memory.open(settings.model_copy(update={"data_dir": root / "system"}))
        raw = RawTurnIndex(root / "baselines", memory.embedder)
        try:
            memory.ingest(dataset.parsed.sessions,
                          progress=_counter("ingest", dataset.parsed.turns, tick))
            raw.build(dataset.parsed.sessions,
                      progress=_counter("baselines", dataset.parsed.turns, tick))
            rankers: list[Ranker] = [HybridRanker(memory, graph=graph, match=match), BM25RawRanker(raw),
                                     DenseRawRanker(raw)]
            answered: dict[str, list[tuple[Question, Ranked]]] = {r.name: [] for r in rankers}
            for i, q in enumerate(dataset.questions, start=1):
                for r in rankers:
                    answered[r.name].append((q, r.rank(q)))
                tick("questions", i, len(dataset.questions))
        finally:
            raw.close()
            memory.close()
    scored = {
        name: [(q, score_question(q, r, ks, turn_level)) for q, r in rows]
        for name, rows in answered.items()
    }
    metrics = {name: aggregate(rows) for name, rows in scored.items()}
    result = {
        "system": metrics["system"],
        "baselines": {"bm25_raw": metrics["bm25_raw"], "dense_raw": metrics["dense_raw"]},
        "system_vs": {name: compare(scored["system"], scored[name], ks)
                      for name in ("bm25_raw", "dense_raw")},
        "retriever": {**retriever_settings(settings), "graph": graph,
                      "profile_match": match},
        "dataset": str(dataset_name(dataset)),
        "format": dataset.format,
        "questions": len(dataset.questions),
        "k": list(ks),
        # Per question, so a later run can be paired with this one (compare_runs).
        "per_question": {
            q.qid: {"adversarial": q.adversarial,
                    **{name: rows[i][1] for name, rows in scored.items()}}
            for i, (q, _) in enumerate(scored["system"])
        },
    }
    curves = {name: recall_curve(rows) for name, rows in answered.items()}
    return EvalRun(result=result, curves=curves)


def compare(
    ours: Sequence[tuple[Question, dict[str, float]]],
    theirs: Sequence[tuple[Question, dict[str, float]]],
    ks: Sequence[int],
) -> dict[str, dict[str, float | int]]:
    """The system minus one baseline, per metric, over the non-adversarial questions."""
    out: dict[str, dict[str, float | int]] = {}
    names = [f"{m}@{k}" for m in ("session_recall", "turn_recall", "ndcg") for k in ks]
    for name in names:
        pairs = [(a[1][name], b[1][name]) for a, b in zip(ours, theirs, strict=True)
                 if not a[0].adversarial and name in a[1] and name in b[1]]
        if pairs:
            out[name] = paired_difference([a for a, _ in pairs], [b for _, b in pairs])
    return out


def compare_runs(
    ours: dict[str, Any], previous: dict[str, Any], ks: Sequence[int]
) -> dict[str, dict[str, float | int]]:
    """This run's system minus an earlier run's system, paired by question id.

    Both result files must come from the same dataset (same question ids); the
    earlier file needs ``per_question`` (written since this field exists).
    """
    mine, theirs = ours.get("per_question"), previous.get("per_question")
    if not mine or not theirs:
        raise ValueError("previous result: no per_question scores (re-run it with this version)")
    if set(mine) != set(theirs):
        raise ValueError("previous result: its questions differ from this run's (other dataset?)")
    out: dict[str, dict[str, float | int]] = {}
    names = [f"{m}@{k}" for m in ("session_recall", "turn_recall", "ndcg") for k in ks]
    for name in names:
        pairs = [(row["system"][name], theirs[qid]["system"][name])
                 for qid, row in mine.items() if not row["adversarial"]
                 and name in row["system"] and name in theirs[qid]["system"]]
        if pairs:
            out[name] = paired_difference([a for a, _ in pairs], [b for _, b in pairs])
    return out


def retriever_settings(settings: Settings) -> dict[str, Any]:
    """The retrieval knobs the system ran with, so a result file says what it measured."""
    keys = ("fusion", "dense_weight", "coverage_weighting", "rrf_k", "keyword_alpha",
            "candidate_units", "session_lexical_weight", "session_min_unit_coverage",
            "session_min_session_coverage", "date_boost", "dense_skip", "dense_skip_coverage",
            "llm_backend", "embed_backend")
    return {k: getattr(settings, k) for k in keys}


def _counter(stage: str, total: int,
             tick: Callable[[str, int, int], None]) -> Callable[[int], None]:
    """Turn "n more done" callbacks into running ``tick(stage, done, total)`` calls."""
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        tick(stage, done, total)

    return advance


def dataset_name(dataset: Dataset) -> str:
    users = dataset.users
    return f"{dataset.format}: {len(users)} users, {len(dataset.parsed.sessions)} sessions"


def plot_curves(curves: dict[str, list[float]], path: Path, title: str) -> None:
    """Save session Recall@k for k = 1..N, one line per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, ys in curves.items():
        ax.plot(range(1, len(ys) + 1), ys, marker="o", markersize=3, label=name,
                linewidth=2.2 if name == "system" else 1.4)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("k (sessions returned)")
    ax.set_ylabel("session Recall@k")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
