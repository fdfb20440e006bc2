"""Chaos: SIGKILL ``memstrata serve`` at random moments while clients ingest; count losses.

For each mode, on a fresh data dir: start ``memstrata serve`` (embedded broker,
stream worker and stores in one process), let ``--clients`` threads send
IngestBatch calls (at most ``--max-batches`` each per round) under a new user,
SIGKILL the server after a random delay, check that no tansu process outlived
it, restart it on the same data dir and count which acknowledged messages are
in memory. Repeated ``--kills`` times.

The two modes, side by side in one run:

* ``stored`` (the default, ``MEMSTRATA_SERVICE_INGEST_ACK=stored``): Ingest
  answers once the stream worker has written and flushed the messages.
* ``broker`` (the baseline, the old behaviour): Ingest answers once the
  embedded broker, which holds topics in memory only, has them.

    .venv/bin/python -m bench.chaos_ingest --kills 20 --baseline-kills 5

Prints a line per kill and a final table; writes ``bench/out/chaos_ingest.png``
(acknowledged vs stored per kill) and ``bench/out/chaos_ingest.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench._common import OUT_DIR, console, load_average, print_table, setup_matplotlib, verdict
from tests.support.serve_proc import (
    ServeProcess,
    add_key,
    batch,
    stored_message_ids,
    tansu_children,
    wait_gone,
)


class Ingester(threading.Thread):
    """One client sending IngestBatch calls until told to stop; notes what was acknowledged."""

    def __init__(self, address: str, key: str, user: str, name: str, batch_size: int,
                 max_batches: int) -> None:
        super().__init__(daemon=True)
        self.address, self.key, self.user, self.tag = address, key, user, name
        self.batch_size, self.max_batches = batch_size, max_batches
        self.acked: set[str] = set()
        self.durability: set[str] = set()
        self.failed = 0
        self.stop_flag = threading.Event()

    def run(self) -> None:
        from memstrata.client import Durability, MemoryClient

        with MemoryClient(self.address, api_key=self.key, timeout_s=30.0) as client:
            for j in range(self.max_batches):
                if self.stop_flag.is_set():
                    return
                ids = [f"{self.tag}-b{j}-m{i}" for i in range(self.batch_size)]
                try:
                    reply = client.ingest(batch(self.user, f"{self.tag}-s{j % 3}", ids))
                except Exception:  # noqa: BLE001 - the server was killed mid-call: not acked
                    self.failed += 1
                    if self.stop_flag.wait(0.05):
                        return
                    continue
                if reply.accepted == len(ids):
                    self.acked.update(ids)
                    self.durability.add(str(Durability.of(reply)))


def run_mode(mode: str, kills: int, args: argparse.Namespace, rng: random.Random,
             ) -> list[dict[str, Any]]:
    from memstrata.client import MemoryClient
    from memstrata.model import Scope

    env = {"MEMSTRATA_SERVICE_INGEST_ACK": mode}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix=f"memstrata-chaos-{mode}-") as tmp:
        data = Path(tmp)
        key = add_key(data, "chaos")
        serve = ServeProcess(data, env)
        try:
            serve.wait_serving()
            for k in range(kills):
                user = f"u{k}"
                workers = [Ingester(serve.address, key, user, f"k{k}c{c}", args.batch,
                                    args.max_batches) for c in range(args.clients)]
                for w in workers:
                    w.start()
                delay = rng.uniform(args.min_delay, args.max_delay)
                time.sleep(delay)
                brokers = tansu_children(serve.pid)
                serve.kill()
                orphans = wait_gone(brokers, timeout_s=10)
                for w in workers:
                    w.stop_flag.set()
                for w in workers:
                    w.join(60)
                acked = set().union(*(w.acked for w in workers))
                t0 = time.perf_counter()
                serve = ServeProcess(data, env)
                serve.wait_serving()
                restart_s = time.perf_counter() - t0
                with MemoryClient(serve.address, api_key=key) as client:
                    stored = stored_message_ids(client, Scope(tenant_id="chaos", user_id=user))
                row: dict[str, Any] = {"mode": mode, "kill": k + 1, "delay_s": round(delay, 2),
                       "acked": len(acked), "acked_stored": len(acked & stored),
                       "lost": len(acked - stored), "unacked_stored": len(stored - acked),
                       "failed_calls": sum(w.failed for w in workers),
                       "orphan_brokers": len(orphans), "restart_s": round(restart_s, 1),
                       "durability": sorted(set().union(*(w.durability for w in workers)))}
                rows.append(row)
                console.print(
                    f"\\[{mode}] kill {k + 1}/{kills} after {delay:.1f}s: acked {row['acked']}, "
                    f"of those stored {row['acked_stored']}, lost [bold]{row['lost']}[/bold]; "
                    f"stored unacked {row['unacked_stored']}; failed calls "
                    f"{row['failed_calls']}; orphan brokers {row['orphan_brokers']}; "
                    f"restart {restart_s:.1f}s; ack says {','.join(row['durability']) or '-'}",
                    soft_wrap=True)
        finally:
            serve.stop()
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    plt = setup_matplotlib()
    modes = [m for m in ("broker", "stored") if any(r["mode"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(modes), figsize=(6 * len(modes), 4), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        rs = [r for r in rows if r["mode"] == mode]
        x = [r["kill"] for r in rs]
        ax.bar([i - 0.2 for i in x], [r["acked"] for r in rs], width=0.4, label="acknowledged")
        ax.bar([i + 0.2 for i in x], [r["acked_stored"] for r in rs], width=0.4,
               label="acknowledged and stored after restart")
        lost = sum(r["lost"] for r in rs)
        title = ("baseline: ack at the memory-only broker" if mode == "broker"
                 else "ack once stored (default)")
        ax.set_title(f"{title}\n{lost} of {sum(r['acked'] for r in rs)} acknowledged lost")
        ax.set_xlabel("kill")
        ax.set_xticks(x)
        ax.set_ylabel("messages")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kills", type=int, default=20, help="SIGKILLs in the default mode")
    p.add_argument("--baseline-kills", type=int, default=5,
                   help="SIGKILLs with the baseline (ack at the broker); 0 skips it")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--batch", type=int, default=25, help="messages per IngestBatch")
    p.add_argument("--max-batches", type=int, default=400,
                   help="the most batches one client sends per round (bounds the loop)")
    p.add_argument("--min-delay", type=float, default=4.0)
    p.add_argument("--max-delay", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=16)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    console.print(f"load average {load_average():.1f}; {args.clients} clients x "
                  f"{args.batch} messages per IngestBatch; SIGKILL after "
                  f"{args.min_delay:g}-{args.max_delay:g} s")
    rows: list[dict[str, Any]] = []
    if args.baseline_kills:
        rows += run_mode("broker", args.baseline_kills, args, rng)
    rows += run_mode("stored", args.kills, args, rng)
    summary = []
    for mode in ("broker", "stored"):
        rs = [r for r in rows if r["mode"] == mode]
        if not rs:
            continue
        acked = sum(r["acked"] for r in rs)
        lost = sum(r["lost"] for r in rs)
        summary.append([mode, len(rs), acked, acked - lost, lost,
                        sum(r["unacked_stored"] for r in rs),
                        sum(r["orphan_brokers"] for r in rs),
                        acked / sum(r["delay_s"] for r in rs),
                        max(r["restart_s"] for r in rs)])
    print_table("per kill", ["mode", "kill", "delay s", "acked", "acked+stored", "lost",
                             "unacked stored", "orphans"],
                [[r["mode"], r["kill"], r["delay_s"], r["acked"], r["acked_stored"],
                  r["lost"], r["unacked_stored"], r["orphan_brokers"]] for r in rows])
    print_table("chaos: SIGKILL of memstrata serve during IngestBatch",
                ["ack mode", "kills", "acknowledged", "stored after restart", "lost",
                 "stored, not acked", "orphan brokers", "acked msg/s", "max restart s"],
                summary)
    ours = [s for s in summary if s[0] == "stored"]
    if ours:
        console.print(f"nothing acknowledged lost, no orphan broker (ack once stored): "
                      f"{verdict(ours[0][4] == 0 and ours[0][6] == 0)}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "chaos_ingest.json").write_text(json.dumps(
        {"args": vars(args), "rows": rows}, indent=1))
    plot(rows, OUT_DIR / "chaos_ingest.png")
    console.print(f"wrote {OUT_DIR / 'chaos_ingest.png'} and {OUT_DIR / 'chaos_ingest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
