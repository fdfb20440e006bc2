"""``serve``'s memory with glibc's sliding mmap threshold (baseline) against it pinned (ours).

```bash
.venv/bin/python -m bench.allocator [--minutes 4] [--interval 20] [--pinned-kb 128]
```

Runs :mod:`bench.soak` twice on the same load, one after the other, each on a
fresh data dir: first with ``MEMSTRATA_MALLOC_MMAP_THRESHOLD_KB=0`` (glibc's
default, whose threshold slides up as large blocks are freed), then with the
threshold pinned at ``--pinned-kb`` (serve's default, see
``memstrata/native_heap.py``). The embedded broker is recycled at 23 MB so that
both runs include recycles. Prints, side by side: messages acknowledged,
serve's RSS (median of the second half, peak, and at the end split into
anonymous memory and mapped files), its slope over the second half, Search
p50/p99 and IngestBatch p99. Writes ``bench/out/allocator.json`` and
``bench/out/allocator.png`` (serve's RSS against messages, both runs); each
soak's own files are ``bench/out/allocator-sliding.*`` and ``allocator-pinned.*``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from memstrata.native_heap import MAX_KIB

from bench._common import OUT_DIR, ROOT, console, load_average, print_table, pyplot_or_none

SETTING = "MEMSTRATA_MALLOC_MMAP_THRESHOLD_KB"


def soak(name: str, threshold_kb: int, args: argparse.Namespace) -> dict[str, Any]:
    """One soak run with serve's threshold set to ``threshold_kb`` (0: glibc's default)."""
    cmd = [sys.executable, "-m", "bench.soak", "--minutes", str(args.minutes),
           "--interval", str(args.interval), "--recycle-mb", "23", "--recycle-check-s", "5",
           "--name", name]
    console.rule(f"{name}: {SETTING}={threshold_kb}")
    code = subprocess.call(cmd, cwd=ROOT, env={**os.environ, SETTING: str(threshold_kb)})
    path = OUT_DIR / f"{name}.json"
    if code != 0 or not path.exists():
        raise SystemExit(f"bench.soak for {name} exited {code}; see its output above")
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The side-by-side numbers of one soak."""
    rows = result["rows"]
    late = rows[len(rows) // 2:]
    p50s = [r["p50_ms"] for r in rows if r.get("p50_ms") is not None]
    p99s = [r["p99_ms"] for r in rows if r.get("p99_ms") is not None]
    ingest = [r["ingest_p99_ms"] for r in rows if r.get("ingest_p99_ms") is not None]
    trend = result["trends"]["serve"]
    return {
        "messages": result["messages"], "duplicates": result["duplicates"],
        "errors": sum(result["errors"].values()),
        "serve_median_late_mb": statistics.median(r["serve_mb"] for r in late),
        "serve_peak_mb": max(r["serve_peak_mb"] for r in rows),
        "serve_anon_end_mb": rows[-1].get("serve_anon_mb"),
        "serve_file_end_mb": rows[-1].get("serve_file_mb"),
        "per_10k_msgs": trend["per_10k_msgs"], "per_min": trend["per_min"],
        "search_p50_ms": statistics.median(p50s) if p50s else None,
        "search_p99_ms": statistics.median(p99s) if p99s else None,
        "ingest_p99_ms": statistics.median(ingest) if ingest else None,
        "recycles": rows[-1].get("recycles", 0),
    }


def plot(runs: dict[str, dict[str, Any]]) -> Path | None:
    plt = pyplot_or_none()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, result in runs.items():
        rows = result["rows"]
        ax.plot([r["messages"] for r in rows], [r["serve_mb"] for r in rows], marker="o",
                label=f"{name}: RSS")
        ax.plot([r["messages"] for r in rows], [r.get("serve_anon_mb") for r in rows],
                linestyle="--", label=f"{name}: anonymous")
    ax.set_xlabel("messages acknowledged")
    ax.set_ylabel("serve MB (interval median)")
    ax.set_title("serve's memory: glibc's sliding mmap threshold vs pinned")
    ax.legend()
    path = OUT_DIR / "allocator.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--minutes", type=float, default=4.0)
    ap.add_argument("--interval", type=float, default=20.0)
    ap.add_argument("--pinned-kb", type=int, default=128)
    args = ap.parse_args(argv)
    if not 1 <= args.minutes <= 60:
        ap.error(f"--minutes must be within 1..60, got {args.minutes:g}")
    if not 1 <= args.pinned_kb <= MAX_KIB:
        ap.error(f"--pinned-kb must be within 1..{MAX_KIB}, got {args.pinned_kb}")
    console.print(f"two soaks of {args.minutes:g} min, load average {load_average():.2f} "
                  f"on {os.cpu_count()} cores")
    runs = {"sliding": soak("allocator-sliding", 0, args),
            "pinned": soak("allocator-pinned", args.pinned_kb, args)}
    sums = {name: summary(r) for name, r in runs.items()}
    keys = list(sums["sliding"])
    print_table("serve under the same soak: glibc's sliding threshold (baseline) vs pinned",
                ["", "sliding (baseline)", f"pinned at {args.pinned_kb} KiB"],
                [[k, sums["sliding"][k], sums["pinned"][k]] for k in keys])
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / "allocator.json"
    out.write_text(json.dumps({"config": vars(args), "summary": sums}, indent=2) + "\n")
    png = plot(runs)
    console.print(f"wrote {out}" + (f" and {png}" if png else ""))


if __name__ == "__main__":
    main()
