"""Controller overhead per question outside LLM calls: rule controller vs plain top-K.

```bash
.venv/bin/python -m bench.controller_overhead [DATASET] [--limit N] [--warmup N] [--data-dir DIR]
```

The dataset (LoCoMo by default) is ingested into a temporary embedded store
(or ``--data-dir``), then every question is answered twice in the offline
mode, alternating:

* **controller**: the rule policy with notes and the extractive answer;
* **top-K**: the "without controller" ablation (one search, the top 3
  sessions read at every layer, same notes and answer).

Side by side, per question, p50 and p99 of the total time, the time inside
Memory (search, including query encoding, and L0-L3 reads) and the rest,
which is the controller's own overhead (cue detection, date resolution,
ranking lines, sufficiency checks, notes, answer extraction); there are no
LLM calls offline, so nothing else is left out. The overhead is shown as
wall time and as CPU time (which other processes on the machine do not
inflate). Target: overhead p50 <= 20 ms for the controller. The first ``--warmup`` questions are not timed (model
load, dateparser import). Results go to ``bench/out/controller_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import locomo_default, require_dataset
from bench._common import (
    OUT_DIR,
    console,
    load_average,
    percentiles_ms,
    print_table,
    progress,
    verdict,
)
from memstrata.config import load_settings
from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.eval.datasets import load_dataset
from memstrata.memory import Memory

DEFAULT_DATASET = locomo_default()  # LOCOMO_PATH
TARGET_P50_MS = 20.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--format", default="locomo", choices=["locomo", "longmemeval"])
    ap.add_argument("--limit", type=int, default=None, help="Only the first N questions.")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args()
    args.dataset = require_dataset(args.dataset)

    data = load_dataset(args.dataset, args.format)
    questions = data.questions[: args.limit] if args.limit else data.questions
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-ctl-") as tmp:
        root = args.data_dir or Path(tmp)
        memory = Memory.open(load_settings(data_dir=root))
        try:
            with progress() as bar:
                task = bar.add_task("ingest (turns)", total=data.parsed.turns)
                memory.ingest(data.parsed.sessions, progress=lambda n: bar.advance(task, n))
            systems = {
                "controller": Controller(memory, ControllerSettings(policy="rules")),
                "top-K (w/o controller)": Controller(
                    memory, ControllerSettings(policy="rules", use_controller=False)),
            }
            for q in questions[: args.warmup]:
                for ctl in systems.values():
                    ctl.answer(q.scope, q.question, q.asked_on)
            samples: dict[str, dict[str, list[float]]] = {
                name: {"total": [], "memory": [], "overhead": [], "cpu_overhead": [],
                       "steps": [], "drilled": []}
                for name in systems}
            load_before = load_average()
            t0 = time.perf_counter()
            with progress() as bar:
                task = bar.add_task("answer (questions, both systems)", total=len(questions))
                for q in questions:
                    for name, ctl in systems.items():
                        s = ctl.answer(q.scope, q.question, q.asked_on).summary
                        row = samples[name]
                        row["total"].append(s.ms_total / 1000)
                        row["memory"].append(s.ms_memory / 1000)
                        row["overhead"].append(s.ms_overhead / 1000)
                        row["cpu_overhead"].append(s.cpu_ms_overhead / 1000)
                        row["steps"].append(s.steps)
                        row["drilled"].append(s.sessions_drilled)
                    bar.advance(task)
            seconds = time.perf_counter() - t0
        finally:
            memory.close()

    rows: list[list[object]] = []
    result: dict[str, Any] = {"dataset": str(args.dataset), "questions": len(questions),
                              "load_average": [load_before, load_average()],
                              "seconds": seconds}
    for name, row in samples.items():
        t50, t99 = percentiles_ms(row["total"])
        m50, m99 = percentiles_ms(row["memory"])
        o50, o99 = percentiles_ms(row["overhead"])
        c50, c99 = percentiles_ms(row["cpu_overhead"])
        steps, drilled = statistics.fmean(row["steps"]), statistics.fmean(row["drilled"])
        rows.append([name, t50, t99, m50, m99, o50, o99, c50, c99, steps, drilled])
        result[name] = {"total_ms": [t50, t99], "memory_ms": [m50, m99],
                        "overhead_ms": [o50, o99], "overhead_cpu_ms": [c50, c99],
                        "mean_steps": steps, "mean_sessions_drilled": drilled}
    print_table(
        f"Per-question time, offline mode, {len(questions)} questions "
        f"(load average {load_before:.1f} -> {load_average():.1f})",
        ["system", "total p50 ms", "total p99", "memory p50", "memory p99", "overhead p50",
         "overhead p99", "overhead CPU p50", "CPU p99", "steps", "sessions"], rows)
    wall, cpu = result["controller"]["overhead_ms"][0], result["controller"]["overhead_cpu_ms"][0]
    console.print(f"controller overhead p50: {wall:.2f} ms wall, {cpu:.2f} ms CPU "
                  f"(target <= {TARGET_P50_MS:.0f} ms): {verdict(wall <= TARGET_P50_MS)} wall, "
                  f"{verdict(cpu <= TARGET_P50_MS)} CPU")
    console.print("Wall time grows with the load average on a shared 2-core machine; CPU "
                  "time does not.")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / "controller_overhead.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
