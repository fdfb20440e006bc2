"""Shared benchmark helpers: timing, peak memory, isolated runs, tables, progress.

Each configuration runs in a fresh interpreter (:func:`run_isolated`) so that
its peak RSS is its own and not the high-water mark of whatever ran before it
in the same process. The worker writes its result as JSON (also partially, as
phases finish), so a configuration that crashes or is stopped still reports
what it measured.
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "bench" / "out"
# Logs of long runs are read in files, where rich's default 80 columns wrap the tables.
console = Console(width=None if sys.stdout.isatty() else 140)

Result = dict[str, Any]
Reporter = Callable[[Result], None]


def percentiles_ms(samples_s: Sequence[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds of durations given in seconds."""
    arr = np.asarray(samples_s, dtype=np.float64) * 1000.0
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99))


def time_calls(fn: Callable[[int], object], n: int, warmup: int, label: str) -> list[float]:
    """Call ``fn(i)`` ``warmup`` times untimed, then ``n`` times timed (seconds each)."""
    for i in range(warmup):
        fn(i)
    out: list[float] = []
    with progress() as bar:
        task = bar.add_task(label, total=n)
        for i in range(n):
            t0 = time.perf_counter()
            fn(warmup + i)
            out.append(time.perf_counter() - t0)
            bar.advance(task)
    return out


def peak_rss_mb() -> float:
    """Peak resident memory of this process and of its waited-for children (MiB).

    ``ru_maxrss`` is KiB on Linux (bytes on macOS); the larger of self and
    children is what a configuration needed at its worst moment.
    """
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / scale


def status_mb(pid: int, field: str = "VmRSS") -> float:
    """A resident-memory line of ``/proc/PID/status`` in MB (``RssAnon``: heap and
    anonymous mappings; ``RssFile``: mapped files, the stores' mmaps among them);
    0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _stat_cpu(stat: Path) -> float:
    """User + system CPU seconds from a ``/proc/.../stat`` file (process or thread)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()  # the name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    return _stat_cpu(Path(f"/proc/{pid}/stat"))


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU seconds so far of a process's live threads, summed by thread name.

    Digits are dropped from the names, so a pool's threads (``edge-search-0``,
    ``edge-search-1``) count as one group. Tells whether a cost is the
    interpreter's threads or a native library's own, which a Python sampling
    profiler does not see.
    """
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            used = _stat_cpu(task / "stat")
        except OSError:  # the thread ended meanwhile
            continue
        group = "".join(c for c in name if not c.isdigit()).rstrip("-_") or name
        out[group] = out.get(group, 0.0) + used
    return out


#: Two-sided 95% quantiles of Student's t by degrees of freedom (1-10); 1.96 past them.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def ratio_interval(ratios: Sequence[float]) -> tuple[float, float, float]:
    """Geometric mean of paired per-round ratios, with a 95% t interval.

    Rounds of a side-by-side run are pairs (both sides under the same state of
    the machine), so the spread of their log ratios says how far one run's
    ratio can be trusted; the interval is over the log ratios and mapped back.
    One round gives no spread: its interval is the ratio itself.
    """
    if not ratios or any(r <= 0 for r in ratios):
        raise ValueError(f"ratios must be positive and not empty, got {list(ratios)}")
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / len(logs)
    if len(logs) < 2:
        return math.exp(mean), math.exp(mean), math.exp(mean)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    t = _T95[len(logs) - 2] if len(logs) - 2 < len(_T95) else 1.96
    half = t * sd / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def load_average() -> float:
    """One-minute load average: other work on a 2-core box skews timings, so report it."""
    return os.getloadavg()[0]


def progress() -> Progress:
    """A rich progress bar: count, percentage, elapsed and remaining time."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


@contextmanager
def timed(store: dict[str, float], key: str) -> Iterator[None]:
    """Add the wall time of the block to ``store[key]``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        store[key] = store.get(key, 0.0) + time.perf_counter() - t0


def run_isolated(module: str, config: Result, tree: Path | None = None) -> Result:
    """Run ``python -m module --worker`` on ``config`` in a fresh process; return its result.

    The result carries ``peak_rss_mb`` measured by the worker itself and
    ``exit_code``; a failed worker returns whatever it reported before failing.
    ``tree``: run another checkout's code (a previous commit, as a baseline).
    """
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-") as tmp:
        result_path = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", module, "--worker", json.dumps(config), str(result_path)]
        env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
        proc = subprocess.Popen(cmd, cwd=tree or ROOT, env=env)
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            proc.wait()
            raise
        result: Result = json.loads(result_path.read_text()) if result_path.exists() else {}
    result["exit_code"] = code
    return result


def worker_main(work: Callable[[Result, Reporter], Result]) -> bool:
    """If started by :func:`run_isolated`, run ``work`` and write its result; else False.

    ``work`` gets the config and a reporter that saves partial results, so a
    long configuration that is interrupted still leaves its measured phases.
    """
    if len(sys.argv) != 4 or sys.argv[1] != "--worker":
        return False
    config, path = json.loads(sys.argv[2]), Path(sys.argv[3])
    partial: Result = {}

    def report(update: Result) -> None:
        partial.update(update)
        partial["peak_rss_mb"] = peak_rss_mb()
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(partial))
        tmp.replace(path)

    report(work(config, report))
    return True


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A rich table; floats get a precision that suits their size."""
    table = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*(_fmt(v) for v in row))
    console.print(table)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):  # not measured
            return "-"
        return f"{value:.2f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def verdict(ok: bool) -> str:
    return "[green]PASS[/green]" if ok else "[red]FAIL[/red]"


def setup_matplotlib() -> Any:
    """pyplot on the Agg backend (no display), with the output folder created."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return plt


def pyplot_or_none() -> Any:
    """:func:`setup_matplotlib`, or None (said on the console) without the eval extra.

    For benches whose numbers stand without their plot: they still print and save them.
    """
    try:
        return setup_matplotlib()
    except ImportError:  # matplotlib is in the eval extra
        console.print("matplotlib not installed: no plot")
        return None


#: Where the benches find LoCoMo: it is not shipped here (CC BY-NC 4.0; see the README).
LOCOMO_ENV = "LOCOMO_PATH"


def locomo_default() -> Path | None:
    """The LoCoMo file named by ``LOCOMO_PATH``, or None when it is unset."""
    value = os.environ.get(LOCOMO_ENV)
    return Path(value) if value else None


def require_dataset(path: Path | None) -> Path:
    """``path`` when it is a file; otherwise exit 2 saying how to point the bench at one."""
    if path is None:
        sys.exit(f"no dataset: pass one (--dataset or DATASET) or set {LOCOMO_ENV} to the "
                 f"LoCoMo file (locomo10.json of the LoCoMo release, or a split of it); "
                 f"examples/longmemeval_dev.json works without it")
    if not path.is_file():
        sys.exit(f"dataset {path} does not exist (set {LOCOMO_ENV} or pass a path)")
    return path
