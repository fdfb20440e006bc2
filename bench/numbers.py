"""The README's "Current numbers" table, generated from the benches' JSON output.

``bench/out/`` (where the benches write) and the eval commands' result files are
git-ignored, so the numbers are kept in a committed summary, ``bench/numbers.json``:

    python -m bench.numbers --record        # after a bench run: take every number its JSON gives
    python -m bench.numbers                 # print the table's rows (paste them into the README)
    python -m bench.numbers --check         # README and summary agree, and both with the JSON present

``--record`` changes only the rows whose JSON is present and holds the number (one
``bench/out/service_load.json`` serves two rows, each from its own run); the others
keep their recorded value. ``--set KEY=TEXT`` records a row no bench writes JSON for
(the test suite's time).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = ROOT / "bench" / "numbers.json"
README = ROOT / "README.md"
HEADING = "## Current numbers"
TABLE_HEAD = "| what | number | command |\n| --- | --- | --- |"

Json = dict[str, Any]


@dataclass(frozen=True)
class Row:
    """One line of the table: where its number comes from and how it is written."""

    key: str
    what: str
    command: str
    sources: tuple[str, ...] = ()  # JSON files, relative to the repository root
    number: Callable[[list[Json]], str | None] | None = None  # None: the JSON lacks it


def _check(data: Json, prefix: str) -> str | None:
    """The value of the first check whose name starts with ``prefix``."""
    for check in data.get("checks", []):
        if str(check.get("check", "")).startswith(prefix):
            return str(check["value"])
    return None


#: LoCoMo dev has 885 questions; fewer means another file (the 16 of tests/fixtures'
#: locomo_mini.json write the same default retrieval.json / qa.json).
LOCOMO_DEV_QUESTIONS = 800


def _recall(fmt: str, least: int = 0) -> Callable[[list[Json]], str | None]:
    def number(files: list[Json]) -> str | None:
        if any(f["format"] != fmt or f["questions"] < least for f in files):
            return None
        return " / ".join(f"{f['system']['session_recall@5']:.3f}" for f in files)
    return number


def _search_cpu(files: list[Json]) -> str | None:
    value = _check(files[0], "search CPU per call new/old")
    if value is None:
        return None
    interval = re.search(r"geometric mean ([\d.]+), 95% interval ([\d.]+) \.\. ([\d.]+)", value)
    if interval:
        return f"{interval[1]} ({interval[2]}-{interval[3]})"
    return value.split(" ", 1)[0]


def _p99_at_8(files: list[Json]) -> str | None:
    return _check(files[0], "service Search p99 < 50 ms at 8 callers")


def _chaos(files: list[Json]) -> str | None:
    rows = [r for r in files[0].get("rows", []) if r.get("mode") == "stored"]
    if not rows:
        return None
    acked, lost = sum(r["acked"] for r in rows), sum(r["lost"] for r in rows)
    return f"{lost:,} of {acked:,} over {len(rows)} kills"


def _qa(files: list[Json]) -> str | None:
    if files[0]["config"].get("format") != "locomo" or (
            files[0]["report"]["questions"] < LOCOMO_DEV_QUESTIONS):
        return None
    overall = files[0]["report"]["overall"]
    return f"{overall['precision']:.3f} / {overall['coverage']:.3f}"


def _tracing(files: list[Json]) -> str:
    on, sampled = files[0]["ratio_on_off"], files[0]["ratio_sampled_off"]
    return f"{on[0]:.2f}x ({on[1]:.2f}-{on[2]:.2f}); 1 in 10 sampled {sampled[0]:.2f}x"


def _storm(files: list[Json]) -> str | None:
    return _check(files[0], "refuse-late: A's p99 beside the storm")


def _idle(files: list[Json]) -> str:
    data = files[0]
    later = data["next_idle_period"]["closes"]
    return (f"{data['all_due']['seconds']:.1f} s for {data['all_due']['closes']:,} / "
            f"{'nothing' if later == 0 else f'{later:,} closes'}")


def _allocator(files: list[Json]) -> str:
    a, b = files[0]["summary"]["sliding"], files[0]["summary"]["pinned"]
    return (f"{a['serve_median_late_mb']:.0f} -> {b['serve_median_late_mb']:.0f} MB "
            f"(anonymous {a['serve_anon_end_mb']:.0f} -> {b['serve_anon_end_mb']:.0f}); slope "
            f"{a['per_10k_msgs']:.0f} / {b['per_10k_msgs']:.0f} MB per 10k messages; Search p50 "
            f"{a['search_p50_ms']:.1f} -> {b['search_p50_ms']:.1f} ms")


ROWS: tuple[Row, ...] = (
    Row("recall_locomo", "session recall@5, LoCoMo dev (hybrid L0 retriever)",
        "memstrata eval retrieval -d $LOCOMO_PATH -f locomo -o retrieval.json",
        ("retrieval.json",), _recall("locomo", LOCOMO_DEV_QUESTIONS)),
    Row("recall_lme", "session recall@5, LongMemEval dev / holdout (holdout: the same "
        "command with longmemeval_holdout.json and -o holdout.json)",
        "memstrata eval retrieval -d examples/longmemeval_dev.json -f longmemeval -o lme.json", ("lme.json", "holdout.json"), _recall("longmemeval")),
    Row("search_cpu", "Search CPU per call, new / old tree (95% interval)",
        "python -m bench.service_load $LOCOMO_PATH --baseline-tree DIR --cpu-variants old,new "
        "--rounds 8", ("bench/out/service_load.json",), _search_cpu),
    Row("search_p99", "Search p99 at 8 callers",
        "python -m bench.service_load $LOCOMO_PATH --callers 8",
        ("bench/out/service_load.json",), _p99_at_8),
    Row("chaos", "acknowledged ingests lost to SIGKILLs of `serve`",
        "python -m bench.chaos_ingest --kills 20", ("bench/out/chaos_ingest.json",), _chaos),
    Row("qa_locomo", "offline answers, LoCoMo dev: precision / coverage (no adversarial)",
        "memstrata eval qa -d $LOCOMO_PATH -f locomo -o qa.json", ("qa.json",), _qa),
    Row("tracing", "CPU per Search, tracing on (every trace) / off",
        "python -m bench.tracing_overhead --calls 300 --rounds 8",
        ("bench/out/tracing_overhead.json",), _tracing),
    Row("storm", "quiet tenant's Search p99 beside a retry storm, default limits (target 3x)",
        "python -m bench.service_load --noisy --storm",
        ("bench/out/noisy_neighbour_storm.json",), _storm),
    Row("idle_sweep", "idle sweep of 50k sessions, all due / next period",
        "python -m bench.idle_sweep", ("bench/out/idle_sweep.json",), _idle),
    Row("soak", "soak with embedded broker recycles, process caches capped low so they fill "
        "within it: messages, recycles, broker RSS, `serve` RSS and anonymous memory growth",
        "python -m bench.soak --minutes 25 --interval 30 --recycle-mb 23 --recycle-check-s 5 "
        "--cache-max-entries 1024"),
    Row("allocator", "`serve` under the soak, glibc's sliding mmap threshold -> pinned "
        "(median RSS, second half)", "python -m bench.allocator --minutes 5",
        ("bench/out/allocator.json",), _allocator),
    Row("suite", "test suite (two xdist workers; target < 600 s)",
        "python -m pytest -q -n 2"),
)
BY_KEY = {row.key: row for row in ROWS}


def measured(row: Row, root: Path = ROOT) -> str | None:
    """The row's number from its JSON, or None when a file is absent or lacks it."""
    if row.number is None or not row.sources:
        return None
    paths = [root / source for source in row.sources]
    if not all(path.is_file() for path in paths):
        return None
    try:
        return row.number([json.loads(path.read_text(encoding="utf-8")) for path in paths])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise SystemExit(f"{', '.join(row.sources)}: not the shape {row.key!r} reads "
                         f"({type(exc).__name__}: {exc})") from None


def load(path: Path = SUMMARY) -> dict[str, Json]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def render(summary: dict[str, Json]) -> str:
    """The table, rows in the registry's order; a row with no recorded number is left out."""
    lines = [TABLE_HEAD]
    for row in ROWS:
        if row.key in summary:
            lines.append(f"| {row.what} | {summary[row.key]['number']} | `{row.command}` |")
    return "\n".join(lines) + "\n"


def record(summary: dict[str, Json], root: Path = ROOT,
           today: str | None = None) -> list[str]:
    """Update ``summary`` from the JSON present; return the keys that changed."""
    changed = []
    for row in ROWS:
        number = measured(row, root)
        if number is None or summary.get(row.key, {}).get("number") == number:
            continue
        ran = max((root / source).stat().st_mtime for source in row.sources)
        summary[row.key] = {"number": number, "from": list(row.sources),
                            "recorded": today or date.fromtimestamp(ran).isoformat()}
        changed.append(row.key)
    return changed


def readme_rows(text: str) -> dict[str, tuple[str, str]]:
    """The README table's rows under its heading: what -> (number, command)."""
    if HEADING not in text:
        return {}
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 3 and cells[0] not in ("what", "---"):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def check(summary: dict[str, Json], readme: str, root: Path = ROOT) -> list[str]:
    """Where the README, the summary and the JSON present disagree."""
    problems = []
    for row in ROWS:
        number = measured(row, root)
        kept = summary.get(row.key, {}).get("number")
        if number is not None and number != kept:
            problems.append(f"{row.key}: {', '.join(row.sources)} gives {number!r}, "
                            f"bench/numbers.json {kept!r} (run python -m bench.numbers --record)")
    shown = readme_rows(readme)
    for row in ROWS:
        if row.key not in summary:
            continue
        want = (summary[row.key]["number"], f"`{row.command}`")
        if row.what not in shown:
            problems.append(f"{row.key}: the README's table has no row {row.what!r}")
        elif shown[row.what] != want:
            problems.append(f"{row.key}: the README shows {shown[row.what]}, "
                            f"bench/numbers.json {want}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.numbers",
                                 description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--record", action="store_true",
                    help="Take the numbers of the JSON present into bench/numbers.json.")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=TEXT",
                    help=f"Record a row by hand ({', '.join(BY_KEY)}).")
    ap.add_argument("--check", action="store_true",
                    help="Exit 1 when the README, bench/numbers.json and the JSON disagree.")
    args = ap.parse_args(argv)
    summary = load()
    if args.record or args.set:
        changed = record(summary) if args.record else []
        for item in args.set:
            key, sep, text = item.partition("=")
            if key not in BY_KEY or not sep or not text.strip():
                ap.error(f"--set {item!r}: want KEY=TEXT with KEY one of {', '.join(BY_KEY)}")
            summary[key] = {"number": text.strip(), "recorded": date.today().isoformat(),
                            "from": ["by hand"]}
            changed.append(key)
        SUMMARY.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                           encoding="utf-8")
        print(f"recorded: {', '.join(changed) or 'nothing new'}", file=sys.stderr)
    if args.check:
        problems = check(summary, README.read_text(encoding="utf-8"))
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    print(render(summary), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
