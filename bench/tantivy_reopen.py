"""The tantivy store's native heap over many commits: never reopened (baseline) vs reopened.

```bash
.venv/bin/python -m bench.tantivy_reopen [--commits 12000] [--reopen 1000]
```

tantivy's ``Index`` keeps a little memory for every commit until the index is
dropped; replacing the writer alone does not free it. A store that commits for
days (``serve``'s two BM25 indexes commit on every append, close and delete)
therefore reopens its index every ``MEMSTRATA_TANTIVY_REOPEN_COMMITS`` commits.

Each configuration runs in a fresh process on a fresh index with the same load,
shaped like the session index under ``bench.soak``: per round, three session
documents of 60 words are written twice (an append, then the close) and the
user of ten rounds before is deleted; glibc's mmap threshold is pinned as
``serve`` pins it. Every ``--sample`` commits it reads
glibc's bytes in use (``mallinfo2``: arenas plus mmapped blocks, so the
allocator's free lists are left out) and ``RssAnon``. Prints, side by side:
the second half's slope of each (KB per 1,000 commits, Theil-Sen as in
``bench.soak``), the end values,
microseconds per commit and the slowest reopen. Writes
``bench/out/tantivy_reopen.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import (
    OUT_DIR,
    Reporter,
    Result,
    console,
    load_average,
    print_table,
    pyplot_or_none,
    run_isolated,
    status_mb,
    worker_main,
)
from bench.soak import second_half, theil_sen


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def heap_in_use_kb() -> float:
    """glibc's bytes handed out and not freed (all arenas plus mmapped blocks), in KB."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return (info.uordblks + info.hblkhd) / 1024


def slope_per_1k(points: list[tuple[int, float]]) -> float:
    """KB per 1,000 commits over the second half, judged as the soak judges its trends."""
    late = points[second_half(len(points))] if len(points) >= 2 else []
    if len(late) < 2:
        return 0.0
    return 1000 * theil_sen([x for x, _ in late], [y for _, y in late])


def work(config: Result, report: Reporter) -> Result:
    from memstrata.model import Scope
    from memstrata.native_heap import pin_mmap_threshold
    from memstrata.store.tantivy_store import TantivyLexicalStore
    from memstrata.store.types import LexicalDoc

    pin_mmap_threshold(config["mmap_threshold_kb"])  # as serve does
    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)]
    samples: list[tuple[int, float, float]] = []
    slowest_reopen = 0.0
    with tempfile.TemporaryDirectory(prefix="tantivy-reopen-") as tmp:
        store = TantivyLexicalStore(Path(tmp) / "index", reopen_commits=config["reopen"])
        commit_s = 0.0
        r = 0
        while commits_after(r) < config["commits"]:
            scope = Scope(tenant_id="t", user_id=f"u{r}")
            for _ in range(2):
                docs = [LexicalDoc(id=f"u{r}.s{j}", scope=scope, session_id=f"s{j}",
                                   turn_index=0,
                                   text=" ".join(rng.choice(words) for _ in range(60)))
                        for j in range(3)]
                before, t0 = store.reopens, time.perf_counter()
                store.upsert(docs)
                took = time.perf_counter() - t0
                commit_s += took
                if store.reopens != before:
                    slowest_reopen = max(slowest_reopen, took)
            store.search(scope, f"{rng.choice(words)} {rng.choice(words)}", 5)
            if r >= 10:
                t0 = time.perf_counter()
                store.delete(Scope(tenant_id="t", user_id=f"u{r - 10}"))
                commit_s += time.perf_counter() - t0
            r += 1
            if r % config["sample_rounds"] == 0:
                samples.append((commits_after(r), heap_in_use_kb(),
                                1024 * status_mb(os.getpid(), "RssAnon")))
                report({"samples": samples})
                if len(samples) % 10 == 0:
                    console.print(f"  {samples[-1][0]:,} of {config['commits']:,} commits, "
                                  f"heap in use {samples[-1][1] / 1024:.1f} MB")
        store.close()
    commits = commits_after(r)
    return {"samples": samples, "commits": commits, "reopens": store.reopens,
            "us_per_commit": 1e6 * commit_s / commits, "slowest_reopen_ms": 1e3 * slowest_reopen}


def commits_after(rounds: int) -> int:
    """Commits so far: two upserts per round and a delete from the eleventh on."""
    return 2 * rounds + max(0, rounds - 10)


def summary(result: Result) -> dict[str, Any]:
    samples = result.get("samples", [])
    heap = [(c, h) for c, h, _ in samples]
    anon = [(c, a) for c, _, a in samples]
    return {
        "commits": result.get("commits"), "reopens": result.get("reopens"),
        "heap in use, KB per 1k commits": slope_per_1k(heap),
        "RssAnon, KB per 1k commits": slope_per_1k(anon),
        "heap in use at the end, MB": samples[-1][1] / 1024 if samples else None,
        "RssAnon at the end, MB": samples[-1][2] / 1024 if samples else None,
        "µs per commit": result.get("us_per_commit"),
        "slowest reopen, ms": result.get("slowest_reopen_ms") or None,
    }


def plot(runs: dict[str, Result]) -> Path | None:
    plt = pyplot_or_none()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, result in runs.items():
        samples = result.get("samples", [])
        ax.plot([c for c, _, _ in samples], [h / 1024 for _, h, _ in samples], label=name)
    ax.set_xlabel("commits")
    ax.set_ylabel("glibc heap in use, MB")
    ax.set_title("tantivy store: never reopened vs reopened")
    ax.legend()
    path = OUT_DIR / "tantivy_reopen.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    from memstrata.config import Settings

    if worker_main(work):
        return
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--commits", type=int, default=12_000)
    ap.add_argument("--reopen", type=int, default=1000,
                    help="commits between reopens in the second run (the default setting)")
    ap.add_argument("--sample", type=int, default=300, help="commits between samples")
    args = ap.parse_args(argv)
    if not 1_000 <= args.commits <= 1_000_000:
        ap.error(f"--commits must be within 1000..1000000, got {args.commits}")
    if not 1 <= args.reopen <= args.commits // 4:
        ap.error(f"--reopen must be within 1..{args.commits // 4} (--commits / 4), "
                 f"got {args.reopen}")
    console.print(f"{args.commits:,} commits per run, load average {load_average():.2f}")
    runs: dict[str, Result] = {}
    for name, reopen in (("never reopened", 0), (f"reopened every {args.reopen}", args.reopen)):
        console.rule(name)
        t0 = time.monotonic()
        runs[name] = run_isolated("bench.tantivy_reopen", {
            "commits": args.commits, "reopen": reopen,
            "mmap_threshold_kb": Settings().malloc_mmap_threshold_kb,
            "sample_rounds": max(1, args.sample // 3)})
        console.print(f"{name}: {time.monotonic() - t0:.0f} s, exit {runs[name]['exit_code']}")
    sums = {name: summary(r) for name, r in runs.items()}
    names = list(sums)
    print_table("tantivy store over the same commits: never reopened (baseline) vs reopened",
                ["", *names], [[k, *(sums[n][k] for n in names)] for k in sums[names[0]]])
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / "tantivy_reopen.json"
    out.write_text(json.dumps({"config": vars(args), "summary": sums, "runs": runs},
                              indent=2) + "\n")
    png = plot(runs)
    console.print(f"wrote {out}" + (f" and {png}" if png else ""))


if __name__ == "__main__":
    main()
