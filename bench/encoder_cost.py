"""What each sentence encoder costs: CPU per ingested turn and per Search, in one run.

For every encoder named (``MEMSTRATA_EMBED_BACKEND`` values), a fresh process
ingests the dataset into its own data dir and then asks every question once
with ``Memory.search`` (query cache off, so each call encodes its query). It
reports process CPU per ingested turn and per Search, and how much of each is
the encoder (process CPU spent inside ``embed_documents`` / ``embed_queries``;
the search path is single-threaded, so that CPU is the encoder's, onnxruntime's
pool threads included). Encoders are run in alternation, round by round, so a
change of the machine's load touches all alike. Recall is not measured here:
``memstrata eval retrieval --previous`` does that.

    .venv/bin/python -m bench.encoder_cost [DATASET] [--encoders minilm:float,minilm,wordllama]

An encoder is a backend name, optionally with MiniLM's arithmetic after a colon
(``minilm:float`` is the previous default, ``minilm`` today's integer products).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import (
    OUT_DIR,
    Reporter,
    Result,
    console,
    load_average,
    locomo_default,
    print_table,
    require_dataset,
    run_isolated,
    worker_main,
)

MODULE = "bench.encoder_cost"


def _cpu_wrap(obj: Any, name: str, acc: dict[str, float]) -> None:
    """Shadow ``obj.name`` with a version that adds the process CPU it used to ``acc``."""
    inner: Callable[..., Any] = getattr(obj, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        c0 = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            acc[name] = acc.get(name, 0.0) + time.process_time() - c0

    setattr(obj, name, timed)


def _work(cfg: Result, report: Reporter) -> Result:
    from memstrata.config import load_settings
    from memstrata.eval.datasets import load_dataset
    from memstrata.memory import Memory

    data = load_dataset(Path(cfg["dataset"]), cfg["format"])
    questions = [q for q in data.questions if not q.adversarial][: cfg["questions"] or None]
    with tempfile.TemporaryDirectory(prefix="memstrata-enc-") as tmp:
        backend, _, arithmetic = cfg["encoder"].partition(":")
        extra = {"embed_arithmetic": arithmetic} if arithmetic else {}
        settings = load_settings(data_dir=Path(tmp), embed_backend=backend,
                                 query_cache_size=0, **extra)
        with Memory.open(settings) as memory:
            t0 = time.process_time()
            memory.embedder.embed_documents(["warm up the encoder"] * 8)
            memory.embedder.embed_queries(["warm up"])
            load_s = time.process_time() - t0
            acc: dict[str, float] = {}
            _cpu_wrap(memory.embedder, "embed_documents", acc)
            c0 = time.process_time()
            ing = memory.ingest(data.parsed.sessions)
            ingest_cpu = time.process_time() - c0
            encode_docs = acc.pop("embed_documents", 0.0)
            for q in questions[:5]:  # warm the search path's own caches
                memory.search(q.scope, q.question)
            acc.clear()
            _cpu_wrap(memory.embedder, "embed_queries", acc)
            c0 = time.process_time()
            for q in questions:
                memory.search(q.scope, q.question)
            search_cpu = time.process_time() - c0
    return {"encoder": cfg["encoder"], "name": memory.embedder.name, "turns": ing.turns,
            "ingest_cpu_s": ingest_cpu, "ingest_encode_cpu_s": encode_docs,
            "searches": len(questions), "search_cpu_s": search_cpu,
            "search_encode_cpu_s": acc.get("embed_queries", 0.0), "first_use_cpu_s": load_s,
            "load_avg": load_average()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=locomo_default())
    parser.add_argument("--format", default="locomo", choices=["locomo", "longmemeval"])
    parser.add_argument("--encoders", default="minilm:float,minilm",
                        help="comma-separated MEMSTRATA_EMBED_BACKEND values, minilm with an "
                             "optional :float or :int8; the first is the reference")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each (median reported)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions")
    args = parser.parse_args()
    args.dataset = require_dataset(args.dataset)
    encoders = [e.strip() for e in args.encoders.split(",") if e.strip()]
    runs: dict[str, list[Result]] = {e: [] for e in encoders}
    for r in range(args.rounds):
        for enc in encoders:
            console.rule(f"round {r + 1}/{args.rounds}: {enc}")
            res = run_isolated(MODULE, {"dataset": str(args.dataset), "format": args.format,
                                        "encoder": enc, "questions": args.questions})
            if res["exit_code"] != 0:
                raise SystemExit(f"{enc}: run failed (exit {res['exit_code']})")
            runs[enc].append(res)

    def med(enc: str, key: str, per: str) -> float:
        return statistics.median(1000 * r[key] / r[per] for r in runs[enc])

    rows = []
    ref = encoders[0]
    for enc in encoders:
        turn, search = med(enc, "ingest_cpu_s", "turns"), med(enc, "search_cpu_s", "searches")
        enc_turn = med(enc, "ingest_encode_cpu_s", "turns")
        enc_search = med(enc, "search_encode_cpu_s", "searches")
        rows.append([enc, f"{turn:.2f}", f"{enc_turn:.2f}",
                     f"{turn / med(ref, 'ingest_cpu_s', 'turns'):.2f}",
                     f"{search:.2f}", f"{enc_search:.2f}", f"{search - enc_search:.2f}",
                     f"{search / med(ref, 'search_cpu_s', 'searches'):.2f}",
                     f"{statistics.median(r['peak_rss_mb'] for r in runs[enc]):.0f}"])
    first = runs[ref][0]
    print_table(f"Encoder cost, in-process: {args.dataset.name}, {first['turns']} turns, "
                f"{first['searches']} searches (query cache off), median of {args.rounds}",
                ["encoder", "CPU ms/turn", "of which encode", f"vs {ref}",
                 "CPU ms/Search", "of which encode", "rest", f"vs {ref}", "peak RSS MB"], rows)
    loads = ", ".join(f"{r['load_avg']:.1f}" for rs in runs.values() for r in rs)
    console.print(f"1-min load average at the end of each run: {loads}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "encoder_cost.json").write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    if not worker_main(_work):
        main()
