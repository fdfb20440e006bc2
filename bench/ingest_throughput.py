"""Ingest throughput: the full embedded pipeline against the encoder alone.

The MiniLM encoder is the one part of ingestion that cannot get cheaper
without changing the model, so the pipeline is judged by how close it gets to
it: pipeline turns/s (extractive L0, MiniLM, Qdrant Edge, tantivy, SQLite,
including the final flush that builds the HNSW index) over encoder-alone
texts/s on exactly the texts the pipeline encoded, in the same calls and
batch size. One L0 unit per turn makes the two rates comparable. Target:
pipeline >= 70% of encoder alone.

    .venv/bin/python -m bench.ingest_throughput [DATASET] [--repeat N] [--baseline-tree PATH]
        [--encoder NAME] [--old-encoder NAME]

``--encoder`` picks this run's encoder (``MEMSTRATA_EMBED_BACKEND``: minilm,
wordllama, minilm-static); ``--old-encoder`` adds pipeline runs with another
one, so CPU per ingested turn of two encoders is compared in one run.

Each run is a fresh process (so peak RSS is per run); timings start after the
dataset is parsed, the stores are opened and the encoder (and the builder's
lazy state) is warmed, in both runs alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._common import locomo_default, require_dataset
from bench._common import (
    OUT_DIR,
    Reporter,
    Result,
    console,
    load_average,
    print_table,
    progress,
    run_isolated,
    setup_matplotlib,
    verdict,
    worker_main,
)

MODULE = "bench.ingest_throughput"
DEFAULT_DATASET = locomo_default()  # LOCOMO_PATH
TARGET_RATIO = 0.70
_WARM_TEXTS = 128


def _warm_texts(sessions: Sequence[Any]) -> list[str]:
    """Raw message texts from the dataset: the same warm-up input in both runs."""
    texts = [m.content for s in sessions for t in s.turns for m in t.messages]
    return texts[:_WARM_TEXTS]


def _wrap(obj: Any, name: str, times: dict[str, float], key: str,
          calls: list[list[str]] | None = None) -> None:
    """Shadow ``obj.name`` with a version that adds its wall time to ``times[key]``."""
    inner: Callable[..., Any] = getattr(obj, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        if calls is not None:
            calls.append([str(t) for t in args[0]])
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            times[key] = times.get(key, 0.0) + time.perf_counter() - t0

    setattr(obj, name, timed)


def _pipeline(cfg: Result, report: Reporter) -> Result:
    """Memory.ingest into a fresh data dir; record what was encoded and where time went."""
    from memstrata.config import load_settings
    from memstrata.ingest.formats import read_file
    from memstrata.layers.l0 import build_l0
    from memstrata.memory import Memory

    sessions = read_file(Path(cfg["dataset"])).sessions
    turns = sum(len(s.turns) for s in sessions)
    with tempfile.TemporaryDirectory(prefix="memstrata-ingest-") as tmp:
        memory = Memory.open(load_settings(data_dir=Path(tmp),
                                           embed_backend=cfg.get("embed_backend")))
        with memory:
            memory.embedder.embed_documents(_warm_texts(sessions))
            build_l0(sessions[0].meta, sessions[0].turns, memory.builder)  # lazy dateparser etc.
            times: dict[str, float] = {}
            calls: list[list[str]] = []
            _wrap(memory.builder, "summarize_window", times, "L0 build (extractive)")
            _wrap(memory.embedder, "embed_documents", times,
                  f"encode ({memory.embedder.name})", calls)
            for name in ("put_session", "put_turns", "put_units"):
                _wrap(memory.docs, name, times, "SQLite writes")
            _wrap(memory.lexical, "upsert", times, "tantivy upsert")
            _wrap(memory.vectors, "upsert", times, "Qdrant Edge upsert")
            _wrap(memory, "flush", times, "flush (index optimisation)")
            load = load_average()
            with progress() as bar:
                task = bar.add_task("pipeline: Memory.ingest", total=turns)
                t0, c0 = time.perf_counter(), time.process_time()
                ing = memory.ingest(sessions, progress=lambda n: bar.advance(task, n))
                seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            units = sum(len(c) for c in calls)
    Path(cfg["calls_out"]).write_text(json.dumps(calls))
    times["other"] = seconds - sum(times.values())
    return {"kind": "pipeline", "encoder": memory.embedder.name, "turns": ing.turns, "sessions": ing.sessions, "units": units,
            "seconds": seconds, "cpu_s": cpu, "flush_s": times["flush (index optimisation)"],
            "breakdown": times, "load_avg": load}


def _encoder(cfg: Result, report: Reporter) -> Result:
    """Replay the pipeline's encode calls on a bare encoder, then all texts in one call."""
    from memstrata.config import load_settings
    from memstrata.embed.factory import open_embedder
    from memstrata.ingest.formats import read_file

    sessions = read_file(Path(cfg["dataset"])).sessions
    calls: list[list[str]] = json.loads(Path(cfg["calls_in"]).read_text())
    texts = [t for c in calls for t in c]
    with tempfile.TemporaryDirectory(prefix="memstrata-ingest-") as tmp:
        embedder = open_embedder(load_settings(data_dir=Path(tmp),
                                               embed_backend=cfg.get("embed_backend")))
    embedder.embed_documents(_warm_texts(sessions))
    load = load_average()
    with progress() as bar:
        task = bar.add_task("encoder alone: same calls", total=len(texts))
        t0, c0 = time.perf_counter(), time.process_time()
        for c in calls:
            embedder.embed_documents(c)
            bar.advance(task, len(c))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    embedder.embed_documents(texts)
    one_call = time.perf_counter() - t0
    return {"kind": "encoder", "texts": len(texts), "calls": len(calls), "seconds": seconds,
            "cpu_s": cpu,
            "one_call_s": one_call, "load_avg": load}


def _work(cfg: Result, report: Reporter) -> Result:
    return _pipeline(cfg, report) if cfg["kind"] == "pipeline" else _encoder(cfg, report)


def _median(runs: Sequence[Result], key: str) -> float:
    return statistics.median(float(r[key]) for r in runs)


def _plot(pipe: Sequence[Result], enc: Sequence[Result], path: Path) -> None:
    plt = setup_matplotlib()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    turns = pipe[0]["turns"]
    labels = ["pipeline\n(incl. flush)", "pipeline\n(excl. flush)", "encoder alone\n(same calls)",
              "encoder alone\n(one call)"]
    values = [
        turns / _median(pipe, "seconds"),
        statistics.median(turns / (r["seconds"] - r["flush_s"]) for r in pipe),
        enc[0]["texts"] / _median(enc, "seconds"),
        enc[0]["texts"] / _median(enc, "one_call_s"),
    ]
    bars = ax1.bar(labels, values, color=["#1f77b4", "#6baed6", "#ff7f0e", "#fdae6b"])
    ax1.bar_label(bars, fmt="%.1f")
    ax1.axhline(values[2] * TARGET_RATIO, color="grey", ls=":", label="70% of encoder alone")
    ax1.set_ylabel("turns/s (pipeline), texts/s (encoder)")
    ax1.set_title(f"Ingest throughput, {turns} LoCoMo turns (median of {len(pipe)})")
    ax1.legend(loc="lower center")
    parts = {k: statistics.median(r["breakdown"][k] for r in pipe) for k in pipe[0]["breakdown"]}
    left = 0.0
    for name, secs in parts.items():
        ax2.barh([0], [secs], left=left, label=f"{name}: {secs:.2f}s")
        left += secs
    ax2.set_yticks([])
    ax2.set_xlabel("seconds")
    ax2.set_title("Where the pipeline's time goes")
    ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (median reported)")
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="A checkout of the previous commit: its pipeline runs too, and "
                             "CPU per ingested turn is printed old vs new.")
    parser.add_argument("--encoder", default=None,
                        help="MEMSTRATA_EMBED_BACKEND of this run (default: the setting's)")
    parser.add_argument("--old-encoder", default=None,
                        help="Also run the pipeline with this encoder and print CPU per "
                             "ingested turn old vs new (a --baseline-tree of bf4c00e ignores it).")
    args = parser.parse_args()
    args.dataset = require_dataset(args.dataset)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    calls_path = OUT_DIR / "ingest_encoded_texts.json"
    pipe: list[Result] = []
    enc: list[Result] = []
    old: list[Result] = []
    for r in range(args.repeat):
        console.rule(f"run {r + 1}/{args.repeat}")
        if args.baseline_tree is not None or args.old_encoder is not None:
            b = run_isolated(MODULE, {"kind": "pipeline", "dataset": str(args.dataset),
                                      "embed_backend": args.old_encoder,
                                      "calls_out": str(OUT_DIR / "ingest_baseline_texts.json")},
                             tree=args.baseline_tree)
            if b["exit_code"] != 0:
                raise SystemExit(f"baseline pipeline run failed (exit {b['exit_code']})")
            old.append(b)
        p = run_isolated(MODULE, {"kind": "pipeline", "dataset": str(args.dataset),
                                  "embed_backend": args.encoder,
                                  "calls_out": str(calls_path)})
        if p["exit_code"] != 0:
            raise SystemExit(f"pipeline run failed (exit {p['exit_code']})")
        e = run_isolated(MODULE, {"kind": "encoder", "dataset": str(args.dataset),
                                  "embed_backend": args.encoder,
                                  "calls_in": str(calls_path)})
        if e["exit_code"] != 0:
            raise SystemExit(f"encoder run failed (exit {e['exit_code']})")
        pipe.append(p)
        enc.append(e)

    turns, texts = pipe[0]["turns"], enc[0]["texts"]
    p_rate = turns / _median(pipe, "seconds")
    p_rate_nf = statistics.median(turns / (r["seconds"] - r["flush_s"]) for r in pipe)
    e_rate = texts / _median(enc, "seconds")
    e_one = texts / _median(enc, "one_call_s")
    nan = float("nan")
    rss_p, rss_e = max(r["peak_rss_mb"] for r in pipe), max(r["peak_rss_mb"] for r in enc)
    print_table(
        f"Ingest throughput: {args.dataset.name}, {pipe[0]['sessions']} sessions, {turns} turns,"
        f" {pipe[0]['units']} L0 units (median of {args.repeat})",
        ["run", "items", "wall s", "CPU s", "flush s", "rate /s", "peak RSS MB"],
        [
            ["pipeline: Memory.ingest (turns/s, incl. flush)", turns, _median(pipe, "seconds"),
             _median(pipe, "cpu_s"), _median(pipe, "flush_s"), p_rate, rss_p],
            ["pipeline excl. final flush (turns/s)", turns,
             _median(pipe, "seconds") - _median(pipe, "flush_s"), nan, nan, p_rate_nf, rss_p],
            [f"encoder alone, same {enc[0]['calls']} calls (texts/s)", texts,
             _median(enc, "seconds"), _median(enc, "cpu_s"), nan, e_rate, rss_e],
            ["encoder alone, one call (texts/s)", texts, _median(enc, "one_call_s"), nan, nan,
             e_one, rss_e],
        ],
    )
    parts = {k: statistics.median(r["breakdown"][k] for r in pipe) for k in pipe[0]["breakdown"]}
    total = _median(pipe, "seconds")
    print_table("Pipeline time by stage (median)", ["stage", "seconds", "% of pipeline"],
                [[k, v, 100 * v / total] for k, v in parts.items()])
    if old:
        per_turn = [1000 * _median(runs, "cpu_s") / runs[0]["turns"] for runs in (old, pipe)]
        what = "previous commit" if args.baseline_tree is not None else "another encoder"
        print_table(f"CPU per ingested turn, {what} vs this run (same data, same "
                    "machine, alternating runs)",
                    ["code", "turns", "CPU s", "CPU ms/turn", "vs old", "units encoded"],
                    [[f"old ({old[0].get('encoder', 'minilm')}"
                      f"{', --baseline-tree' if args.baseline_tree is not None else ''})",
                      old[0]["turns"], _median(old, "cpu_s"), per_turn[0], 1.0, old[0]["units"]],
                     [f"new ({pipe[0]['encoder']})", turns, _median(pipe, "cpu_s"), per_turn[1],
                      per_turn[1] / per_turn[0], pipe[0]["units"]]])
    ratio = p_rate / e_rate
    console.print(f"pipeline / encoder alone = {ratio:.1%} (target >= {TARGET_RATIO:.0%}): "
                  f"{verdict(ratio >= TARGET_RATIO)}")
    loads = ", ".join(f"{r['load_avg']:.2f}" for r in [*old, *pipe, *enc])
    console.print("per run wall s: pipeline " + ", ".join(f"{r['seconds']:.1f}" for r in pipe)
                  + "; encoder alone " + ", ".join(f"{r['seconds']:.1f}" for r in enc))
    console.print(f"1-min load average at the start of each timed run: {loads}")
    png = OUT_DIR / "ingest_throughput.png"
    _plot(pipe, enc, png)
    (OUT_DIR / "ingest_throughput.json").write_text(
        json.dumps({"pipeline": pipe, "encoder": enc, "baseline": old, "ratio": ratio}, indent=1))
    console.print(f"plot: {png}")


if __name__ == "__main__":
    if not worker_main(_work):
        main()
