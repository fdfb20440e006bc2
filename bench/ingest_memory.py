"""Peak memory of `memstrata ingest` as the input file grows: streamed vs read whole.

A JSONL export is generated at two sizes (default 2 MB and 20 MB: same kind
of sessions, ten times as many). Each configuration runs in a fresh process
and reports its own peak RSS:

* **streamed** (what ``memstrata ingest`` does): the file is opened as a
  :class:`~memstrata.ingest.formats.Source` and its sessions are fed one at a
  time to ``Memory.ingest`` on the embedded stack (extractive L0, MiniLM,
  Qdrant Edge, tantivy, SQLite), including the final flush.
* **streamed, parse only**: the same reader without the stores, so the
  reader's own share is visible.
* **read whole** (the old way, as a baseline): ``read_file`` builds every
  session of the file in memory first, parse only (no ingest), which is the
  part of the old path that grew with the file.

Target: the streamed reader needs no more memory for the large file than for
the small one (within 2 MiB). The full ingest is printed too: the embedded
stores' own indexes (Qdrant Edge points, tantivy segments) grow with the
number of records indexed, which the reader cannot change.

    .venv/bin/python -m bench.ingest_memory [--small-mb 2] [--large-mb 20]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from bench._common import (
    Reporter,
    Result,
    console,
    load_average,
    print_table,
    run_isolated,
    verdict,
    worker_main,
)

#: Long messages keep the turn count (and so the encoder's time) moderate per MB.
_WORDS = ("garden river market budget cello hiking bakery sister manager kitchen orchid "
          "marathon migration billing recipe journey harbour lantern museum festival").split()


def generate(path: Path, megabytes: float, seed: int = 3) -> dict[str, int]:
    """A JSONL export of about ``megabytes`` MB: 20 users, 4-turn sessions."""
    rnd = random.Random(seed)
    target = int(megabytes * 1_000_000)
    written = sessions = lines = 0
    with path.open("w") as fh:
        while written < target:
            sessions += 1
            for i in range(8):
                role = "user" if i % 2 == 0 else "assistant"
                words = rnd.choices(_WORDS, k=rnd.randint(300, 500))
                text = " ".join(words).capitalize() + "."
                line = json.dumps({
                    "tenant_id": "bench", "user_id": f"u{sessions % 20}",
                    "session_id": f"s{sessions}", "session_date": "2024-05-01T10:00:00",
                    "role": role, "content": text, "message_id": f"s{sessions}#{i}"}) + "\n"
                fh.write(line)
                written += len(line)
                lines += 1
    return {"bytes": written, "sessions": sessions, "lines": lines}


def work(config: Result, report: Reporter) -> Result:
    from memstrata.config import Settings
    from memstrata.ingest.formats import open_source, read_file

    path = Path(config["file"])
    t0 = time.perf_counter()
    if config["mode"] == "whole":
        parsed = read_file(path)
        return {"sessions": len(parsed.sessions), "turns": parsed.turns,
                "seconds": time.perf_counter() - t0}
    if config["mode"] == "parse":
        n = turns = 0
        for session in open_source(path).sessions():
            n += 1
            turns += len(session.turns)
        return {"sessions": n, "turns": turns, "seconds": time.perf_counter() - t0}
    from memstrata.memory import Memory

    with tempfile.TemporaryDirectory(prefix="memstrata-bench-") as tmp:
        source = open_source(path)
        with Memory.open(Settings(data_dir=Path(tmp))) as memory:
            r = memory.ingest(source.sessions())
    return {"sessions": r.sessions, "turns": r.turns, "seconds": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small-mb", type=float, default=2.0)
    parser.add_argument("--large-mb", type=float, default=20.0)
    args = parser.parse_args()
    rows = []
    peaks: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-data-") as tmp:
        files = {}
        for label, mb in (("small", args.small_mb), ("large", args.large_mb)):
            path = Path(tmp) / f"{label}.jsonl"
            files[label] = (path, generate(path, mb))
        labels = {"whole": "read whole (old way, parse only)",
                  "parse": "streamed, parse only", "stream": "streamed + ingest"}
        for mode in ("whole", "parse", "stream"):
            for label, (path, info) in files.items():
                console.print(f"[bold]{mode}[/bold] {label} ({info['bytes'] / 1e6:.1f} MB) ...")
                res = run_isolated("bench.ingest_memory", {"mode": mode, "file": str(path)})
                peaks[(mode, label)] = res.get("peak_rss_mb", float("nan"))
                rows.append([labels[mode],
                             f"{info['bytes'] / 1e6:.1f} MB", res.get("sessions", 0),
                             res.get("turns", 0), res.get("seconds", float("nan")),
                             peaks[(mode, label)]])
    print_table(f"peak RSS by input size (load average {load_average():.2f})",
                ["path", "file", "sessions", "turns", "seconds", "peak RSS MiB"], rows)
    grow = {m: peaks[(m, "large")] - peaks[(m, "small")] for m in labels}
    console.print(f"growth small -> large: read whole {grow['whole']:+.1f} MiB, "
                  f"streamed reader {grow['parse']:+.1f} MiB {verdict(grow['parse'] <= 2.0)} "
                  f"(flat within 2 MiB), streamed + ingest {grow['stream']:+.1f} MiB")


if __name__ == "__main__":
    if not worker_main(work):
        main()
