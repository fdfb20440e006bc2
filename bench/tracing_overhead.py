"""CPU per Search with tracing off vs on, side by side in one run.

```bash
.venv/bin/python -m bench.tracing_overhead [--calls 300] [--rounds 6]
```

Four ``memstrata serve --no-stream`` processes over copies of the same data
(``examples/sample_turns.jsonl`` ingested):

* **off A** and **off B**: no ``OTEL_*`` variable, as every deployment starts;
  the two give the noise floor of the comparison (an A/A ratio);
* **on**: ``OTEL_TRACES_EXPORTER=otlp`` exporting every span (the default
  sampler keeps every trace) over OTLP/HTTP to a receiver on loopback, a
  process of its own (``tests/support/otlp_receiver.py``) so that decoding
  is not counted;
* **on 10%**: the same, sampling one trace in ten
  (``OTEL_TRACES_SAMPLER=parentbased_traceidratio``, ``OTEL_TRACES_SAMPLER_ARG=0.1``).

Rounds rotate the order of the servers; in each, ``--calls`` Search calls go
to each server from one blocking client (not traced), and the server
process's CPU time (user + system, all threads, exporter included) is read from
``/proc`` before and after. Reported: CPU ms per Search per configuration, the
paired per-round ratios (geometric mean with a 95% interval) of each traced
server to the untraced pair and of off B/off A, and the spans the receiver got. Results in
``bench/out/tracing_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import (
    OUT_DIR,
    ROOT,
    console,
    cpu_seconds,
    load_average,
    print_table,
    ratio_interval,
)

SAMPLE = ROOT / "examples" / "sample_turns.jsonl"
QUERIES = ["Lisbon trip with my sister", "half marathon training", "vegetarian food",
           "seafood places", "budget for five days", "running shoes", "the kitten's name",
           "day trip to Sintra"]
MODES = ("off A", "off B", "on", "on 10%")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("OTEL_", "MEMSTRATA_"))} | {"PYTHONPATH": str(ROOT)}


def _ingest(data_dir: Path) -> None:
    subprocess.run([sys.executable, "-m", "memstrata", "ingest", str(SAMPLE)], check=True,
                   env=_clean_env() | {"MEMSTRATA_DATA_DIR": str(data_dir)},
                   capture_output=True, timeout=300)


class Serve:
    """``memstrata serve --no-stream`` on a free port (the query service alone)."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        from streams.broker import free_port

        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log = (data_dir / "serve.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memstrata", "serve", "--no-stream", "--port",
             str(self.port)], env=_clean_env() | {"MEMSTRATA_DATA_DIR": str(data_dir)} | env,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.data_dir = data_dir

    def wait(self) -> None:
        from tests.support.serve_proc import wait_serving

        def exited() -> str | None:
            if self.proc.poll() is None:
                return None
            return f"serve exited: {(self.data_dir / 'serve.log').read_text()[-2000:]}"

        wait_serving(self.address, 180, exited)

    def stop(self) -> None:
        from tests.support.serve_proc import stop_gracefully

        stop_gracefully(self.proc)
        self.log.close()


def _receiver(tmp: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    port_file, out = tmp / "receiver.port", tmp / "spans.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.otlp_receiver",
                             "--port-file", str(port_file), "--out", str(out)],
                            cwd=ROOT, env=_clean_env())
    deadline = time.monotonic() + 60
    while not port_file.is_file() or not port_file.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the OTLP receiver did not start")
        time.sleep(0.05)
    return proc, int(port_file.read_text()), out


def _searches(client: Any, calls: int, offset: int) -> list[float]:
    from memstrata.model import Scope

    scope = Scope(tenant_id="acme", user_id="maya")
    took = []
    for i in range(calls):
        t0 = time.perf_counter()
        client.search(scope, QUERIES[(offset + i) % len(QUERIES)])
        took.append(time.perf_counter() - t0)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=300, help="Search calls per server per round")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=50)
    args = ap.parse_args()
    from memstrata.client import MemoryClient
    from tests.support.serve_proc import add_key

    tmp = Path(tempfile.mkdtemp(prefix="memstrata-tracing-bench-"))
    receiver, port, spans_file = _receiver(tmp)
    servers: dict[str, Serve] = {}
    try:
        base = tmp / "base"
        console.print(f"ingesting {SAMPLE.name} ...")
        _ingest(base)
        otel = {"OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
        keys: dict[str, str] = {}
        for mode in MODES:
            data = tmp / mode.replace(" ", "-")
            shutil.copytree(base, data)
            keys[mode] = add_key(data, "acme")
            env = {"on": otel, "on 10%": otel | {
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "0.1"}}.get(mode, {})
            servers[mode] = Serve(data, env)
        for s in servers.values():
            s.wait()
        clients = {m: MemoryClient(s.address, api_key=keys[m]) for m, s in servers.items()}
        for m in MODES:  # the query encoder's first calls, the pools' first threads
            _searches(clients[m], args.warmup, 0)
        cpu: dict[str, list[float]] = {m: [] for m in MODES}
        lat: dict[str, list[float]] = {m: [] for m in MODES}
        load = load_average()
        for r in range(args.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for m in order:
                pid = servers[m].proc.pid
                c0 = cpu_seconds(pid)
                lat[m] += _searches(clients[m], args.calls, r)
                cpu[m].append((cpu_seconds(pid) - c0) * 1000 / args.calls)
            console.print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{m} {cpu[m][-1]:.3f} CPU ms/Search" for m in MODES))
        for c in clients.values():
            c.close()
        time.sleep(7)  # the batch span processor exports every 5 s
        servers["on"].stop()  # shutdown flushes what is left
        servers["on 10%"].stop()
        got = [json.loads(line) for line in spans_file.read_text().splitlines() if line]
    finally:
        for s in servers.values():
            if s.proc.poll() is None:
                s.stop()
        receiver.terminate()
        receiver.wait(10)
    searched = args.calls * args.rounds + args.warmup
    names: dict[str, int] = {}
    for span in got:
        names[span["name"]] = names.get(span["name"], 0) + 1
    off = [(a + b) / 2 for a, b in zip(cpu["off A"], cpu["off B"])]
    on_off = ratio_interval([on / o for on, o in zip(cpu["on"], off)])
    sampled_off = ratio_interval([on / o for on, o in zip(cpu["on 10%"], off)])
    aa = ratio_interval([b / a for a, b in zip(cpu["off A"], cpu["off B"])])
    rows = [[m, statistics.median(cpu[m]), min(cpu[m]), max(cpu[m]),
             statistics.median(lat[m]) * 1000] for m in MODES]
    print_table(f"CPU per Search, server process ({args.rounds} rounds x {args.calls} calls; "
                f"load {load:.2f})", ["tracing", "CPU ms median", "min", "max",
                                      "latency p50 ms"], rows)
    print_table("Paired per-round ratios (geometric mean, 95% interval)",
                ["ratio", "mean", "low", "high"],
                [["on / off", *on_off], ["on 10% / off", *sampled_off],
                 ["off B / off A (noise floor)", *aa]])
    console.print(f"spans received from the traced servers: {len(got)} for {searched} Search "
                  f"calls to each: " + ", ".join(f"{n} x{c}" for n, c in sorted(names.items())))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "tracing_overhead.json").write_text(json.dumps({
        "calls": args.calls, "rounds": args.rounds, "load_average": load,
        "cpu_ms_per_search": cpu, "ratio_on_off": on_off, "ratio_sampled_off": sampled_off,
        "ratio_off_b_off_a": aa,
        "spans": names, "searches": searched}, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
