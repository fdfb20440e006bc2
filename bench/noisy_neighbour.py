"""Noisy neighbour: a quiet tenant's Search beside another tenant's flood, FIFO vs fair.

```bash
LOCOMO_PATH=... .venv/bin/python -m bench.service_load --noisy [--seconds 10] \
    [--callers 64] [--quiet-rate 10] [--modes fifo,fair-nospare,fair] [--rounds 1] [--limit N] \
    [--storm] [--unique]
```

(the same as ``python -m bench.noisy_neighbour ...``). LoCoMo dev is ingested
for two tenants, ``quiet`` and ``flood``. For each scheduler (``fifo``: the
old path, ``MEMSTRATA_SERVICE_SCHEDULER=fifo``; ``fair``: the default, fair
with one spare slot; ``fair-nospare``: fair with
``MEMSTRATA_SERVICE_SPARE_SLOTS=0``, the default before 2026-12-04;
``fair-spare``: ``MEMSTRATA_SERVICE_SPARE_SLOTS=1`` named) the query
service runs in its own process over a copy of that data (as ``serve
--no-stream``: no stream worker, offline, the query-vector cache off, since
each phase asks the questions of the phase before again) and is measured
three ways, each for ``--seconds``:

1. **A alone**: one caller of tenant ``quiet`` (Search) at ``--quiet-rate``
   calls/s on a fixed timetable (default 10: a busy user, a few percent of the
   machine); ``--quiet-rate 0`` makes it a closed-loop caller, which on a fast
   path asks for as much of the machine as the flood does;
2. **B alone**: ``--callers`` closed-loop callers of tenant ``flood``, in a
   process of their own (so their client work does not share A's
   interpreter);
3. **A beside B**: both at once; B's throughput counts the calls it completed
   while A was measured.

Per-tenant rate and concurrency limits are lifted for both tenants, so what
is measured is the scheduler, not the token bucket (but see ``--storm``). Printed per scheduler: A's
p50/p99 alone and beside the flood, B's throughput alone and beside, errors
(calls shed by the fair scheduler count as errors of their tenant), and the
load average. Targets (the fair scheduler): A's p99 beside the flood <= 3x
alone; B's throughput beside >= 90% of B alone. Also shown: A's and B's calls
together beside the flood against B alone, since a closed-loop caller of A,
once served promptly, takes its own share of the machine (at about 6 ms of
machine per Search, a caller answered within 30 ms asks for 20% of it). Results go to
``bench/out/noisy_neighbour.json`` and a plot to ``bench/out/noisy_neighbour.png``.

``--storm``: the retry storm of issue 31 (item 9). Both tenants keep the
DEFAULT limits (``MEMSTRATA_SERVICE_RATE_PER_S``, ``_BURST``,
``_MAX_CONCURRENT``), so B's callers, which retry 10 ms after each
RESOURCE_EXHAUSTED whatever its ``retry-after-ms`` says, are mostly refused:
there are 128 of them by default, twice the concurrency limit, since on a
2-core machine 64 callers get fewer Searches than the 200/s rate limit lets
through. The query cache stays on (as in ``serve``; A asks new questions in
every phase). The modes default to ``refuse-late-nospare`` (refusals held
until their retry-after, a tenant's refusals paced,
``query_service/interceptors/refusals.py``, no spare slot:
``MEMSTRATA_SERVICE_SPARE_SLOTS=0``, the default before 2026-12-04) and
``refuse-late`` (the default: held refusals and one spare slot). Also known:
``refuse-now`` (``MEMSTRATA_SERVICE_REFUSAL_HOLD_MAX_S=0`` and no spare slot:
every refusal answered at once, as before issue 31, though already without
reading the request) and ``refuse-late-spare`` (one spare slot, named).
Printed per mode, besides A's
p50/p99 alone and beside: B's served and refused calls/s and the service
process's CPU (share of one core) in each phase. Target (``refuse-late``): A's
p99 beside the storm <= 3x alone. Results go to
``bench/out/noisy_neighbour_storm.json`` and ``.png``.

``--unique``: every flood call asks a question of its own (the dataset's
question with the flood process's id and a running number appended), so with
the query cache on (as with ``--storm``) no flood call finds its query vector
cached: each pays the encoder, as a flood of real users' questions would.
Without it each phase's flood asks the same questions in the same order from
the first, so "B beside" re-asks what "B alone" asked (and a caller's retry
asks the question it was refused), and with the cache on these cost the server
less than new ones: ``--storm`` without ``--unique`` flatters B's calls/s
beside A, and makes the storm lighter for A.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import OUT_DIR, ROOT, console, load_average, percentiles_ms, print_table
from bench._common import locomo_default, progress, pyplot_or_none, require_dataset, verdict

QUIET, FLOOD = "quiet", "flood"
#: The schedulers compared (``--modes``): the service's environment for each.
MODES: dict[str, dict[str, str]] = {
    "fifo": {"MEMSTRATA_SERVICE_SCHEDULER": "fifo"},
    "fair": {"MEMSTRATA_SERVICE_SCHEDULER": "fair"},  # the default: one spare slot
    "fair-nospare": {"MEMSTRATA_SERVICE_SCHEDULER": "fair", "MEMSTRATA_SERVICE_SPARE_SLOTS": "0"},
    "fair-spare": {"MEMSTRATA_SERVICE_SCHEDULER": "fair", "MEMSTRATA_SERVICE_SPARE_SLOTS": "1"},
    # --storm: refusals answered at once, as before issue 31 (and no spare slot) ...
    "refuse-now": {"MEMSTRATA_SERVICE_REFUSAL_HOLD_MAX_S": "0",
                   "MEMSTRATA_SERVICE_SPARE_SLOTS": "0"},
    # ... or late: the default (with one slot of each pool kept for the other tenants),
    # without the spare slot (the default before 2026-12-04), with it named.
    "refuse-late": {},
    "refuse-late-nospare": {"MEMSTRATA_SERVICE_SPARE_SLOTS": "0"},
    "refuse-late-spare": {"MEMSTRATA_SERVICE_SPARE_SLOTS": "1"},
}
STORM_MODES = "refuse-late-nospare,refuse-late"
DEFAULT_MODES = "fifo,fair-nospare,fair"
#: --storm's callers: twice the default concurrency limit (64), so half of them are refused
#: on any machine; where 64 callers get more than the default 200 Searches/s (the issue's
#: machine), the rate limit refuses them too, and --callers 64 shows that storm.
STORM_CALLERS = 128


# -- the flood: its own process -------------------------------------------------------

def flood_main(address: str, key: str, questions_file: str, callers: int,
               seconds: float, out: str, unique: bool = False) -> None:
    """``--flood``: ``callers`` closed-loop Search callers for ``seconds``; completions to JSON.

    A caller waits 10 ms after a failed call, whatever the failure and its
    ``retry-after-ms``. ``unique``: each call's question gets this process's id and a
    running number, so none is asked twice, in this phase or any other (a retry after
    a refusal asks a new one too). RESOURCE_EXHAUSTED answers count as ``refused``, other
    failures as ``errors``. Prints ``ready`` once connected; times are
    ``time.monotonic()`` (one clock for every process on Linux), so the parent
    can count calls inside its own window.
    """
    from memstrata.client import AsyncMemoryClient, RateLimited
    from memstrata.model import Scope

    asks = json.loads(Path(questions_file).read_text())

    async def go() -> dict[str, Any]:
        client = AsyncMemoryClient(address, api_key=key, timeout_s=120)
        done: list[float] = []
        errors: list[float] = []
        refused: list[float] = []
        await client.search(Scope(tenant_id=FLOOD, user_id=asks[0][0]), asks[0][1])
        print("ready", flush=True)
        start = time.monotonic()
        end = start + seconds
        counter = iter(range(10**9))

        async def caller() -> None:
            while time.monotonic() < end:
                n = next(counter)
                user, question = asks[n % len(asks)]
                if unique:  # the pid too: each phase's flood is a process of its own
                    question = f"{question} (ask {os.getpid()}-{n})"
                try:
                    await client.search(Scope(tenant_id=FLOOD, user_id=user), question)
                    done.append(time.monotonic())
                except RateLimited:  # the tenant's limits, or shed by the scheduler
                    refused.append(time.monotonic())
                    await asyncio.sleep(0.01)
                except Exception:  # noqa: BLE001 - counted
                    errors.append(time.monotonic())
                    await asyncio.sleep(0.01)

        await asyncio.gather(*(caller() for _ in range(callers)))
        await client.close()
        return {"start": start, "done": done, "errors": errors, "refused": refused}

    Path(out).write_text(json.dumps(asyncio.run(go())))


class Flood:
    """The flood process: started, waited for until ready, then read back."""

    def __init__(self, address: str, key: str, questions: Path, callers: int,
                 seconds: float, out: Path, unique: bool = False) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.noisy_neighbour", "--flood", address, key,
             str(questions), str(callers), str(seconds), str(out), str(int(unique))],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
            text=True)

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"the flood process did not start ({line!r})")

    def result(self) -> dict[str, Any]:
        self.proc.wait(600)
        if self.proc.returncode != 0:
            raise RuntimeError(f"the flood process exited with {self.proc.returncode}")
        return json.loads(self.out.read_text())  # type: ignore[no-any-return]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def count_in(stamps: Sequence[float], t0: float, t1: float) -> int:
    return sum(1 for t in stamps if t0 <= t < t1)


# -- the quiet caller: this process ---------------------------------------------------

class Quiet:
    def __init__(self, address: str, key: str, asks: Sequence[tuple[str, str]]) -> None:
        from memstrata.client import AsyncMemoryClient

        self.loop = asyncio.new_event_loop()
        self.asks = asks
        #: The next question: each phase goes on from where the one before stopped, so
        #: with the query cache on no phase asks an already cached question.
        self.next = 0

        async def make() -> Any:
            return AsyncMemoryClient(address, api_key=key, timeout_s=120)

        self.client = self.loop.run_until_complete(make())

    def measure(self, seconds: float, rate: float = 0.0) -> dict[str, Any]:
        """One caller for ``seconds``: closed loop (``rate`` 0), or a call every
        ``1 / rate`` s on a fixed timetable (a late call goes at once, and its latency
        counts from when it was due, so a slow service cannot hide by asking less)."""
        from memstrata.model import Scope

        async def go() -> dict[str, Any]:
            lat: list[float] = []
            errors = 0
            t0 = time.monotonic()
            i = 0
            while time.monotonic() - t0 < seconds:
                user, question = self.asks[(self.next + i) % len(self.asks)]
                s = time.perf_counter()
                if rate > 0:
                    due = t0 + i / rate
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    s = time.perf_counter() - max(0.0, time.monotonic() - due)
                i += 1
                try:
                    await self.client.search(Scope(tenant_id=QUIET, user_id=user), question)
                    lat.append(time.perf_counter() - s)
                except Exception:  # noqa: BLE001 - counted
                    errors += 1
            t1 = time.monotonic()
            self.next += i
            p50, p99 = percentiles_ms(lat) if lat else (float("nan"), float("nan"))
            return {"calls": len(lat), "errors": errors, "t0": t0, "t1": t1,
                    "throughput": len(lat) / (t1 - t0), "p50_ms": p50, "p99_ms": p99}

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


# -- one scheduler ---------------------------------------------------------------------

def measure_mode(mode: str, data_dir: Path, keys: Path, key_a: str, key_b: str,
                 asks_a: Sequence[tuple[str, str]], asks_b_file: Path, args: Any,
                 tmp: Path, bar: Any, task: Any) -> dict[str, Any]:
    from bench.service_process import ServiceProcess
    from query_service.settings import ServiceSettings

    default = ServiceSettings()
    # The query-vector cache off: the flood asks the questions of the phase before again,
    # and cached questions would make the later phases (B beside) cheaper. --storm keeps it
    # on, as `serve` does: the flood's repeated questions are then cheap enough for its
    # calls to reach the default rate limit (A's questions are new in every phase).
    cache = {} if args.storm else {"MEMSTRATA_QUERY_CACHE_SIZE": "0"}
    svc = ServiceProcess(data_dir, keys, default.read_threads, default.answer_threads,
                         env={**MODES[mode], **cache})
    quiet: Quiet | None = None
    floods: list[Flood] = []
    out: dict[str, Any] = {"load_start": load_average()}
    try:
        svc.wait_healthy()
        quiet = Quiet(svc.address, key_a, asks_a)
        quiet.measure(min(2.0, args.seconds / 4))  # warm-up
        bar.update(task, description=f"{mode}: A alone")
        cpu0 = svc.cpu_s()
        out["a_alone"] = quiet.measure(args.seconds, args.quiet_rate)
        a0 = out["a_alone"]
        out["a_alone"]["server_cpu"] = (svc.cpu_s() - cpu0) / (a0["t1"] - a0["t0"])
        bar.advance(task)

        bar.update(task, description=f"{mode}: B alone ({args.callers} callers)")
        warm = 2.0
        flood = Flood(svc.address, key_b, asks_b_file, args.callers, args.seconds + warm,
                      tmp / f"flood-{mode}-alone.json", args.unique)
        floods.append(flood)
        flood.wait_ready()
        time.sleep(warm)
        cpu0 = svc.cpu_s()
        time.sleep(args.seconds)
        cpu = (svc.cpu_s() - cpu0) / args.seconds
        b = flood.result()
        t0 = b["start"] + warm
        out["b_alone"] = {"throughput": count_in(b["done"], t0, t0 + args.seconds) / args.seconds,
                          "errors": count_in(b["errors"], t0, t0 + args.seconds),
                          "refused_per_s": count_in(b.get("refused", ()), t0,
                                                    t0 + args.seconds) / args.seconds,
                          "server_cpu": cpu}
        bar.advance(task)

        bar.update(task, description=f"{mode}: A beside B")
        flood = Flood(svc.address, key_b, asks_b_file, args.callers, args.seconds + 2 * warm,
                      tmp / f"flood-{mode}-beside.json", args.unique)
        floods.append(flood)
        flood.wait_ready()
        time.sleep(warm)  # the flood's queue builds up first
        cpu0 = svc.cpu_s()
        a = quiet.measure(args.seconds, args.quiet_rate)
        cpu = svc.cpu_s() - cpu0
        b = flood.result()
        span = a["t1"] - a["t0"]
        out["a_beside"] = a
        out["b_beside"] = {"throughput": count_in(b["done"], a["t0"], a["t1"]) / span,
                           "errors": count_in(b["errors"], a["t0"], a["t1"]),
                           "refused_per_s": count_in(b.get("refused", ()), a["t0"],
                                                     a["t1"]) / span,
                           "server_cpu": cpu / span}
        bar.advance(task)
    finally:
        for f in floods:
            f.kill()
        if quiet is not None:
            quiet.close()
        svc.stop()
    out["load_end"] = load_average()
    return out


def merge_rounds(rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of one scheduler: the worst p99 and the mean throughputs."""
    if len(rounds) == 1:
        return dict(rounds[0])
    out: dict[str, Any] = {"rounds": list(rounds)}
    def kept(part: str, keys: tuple[str, ...]) -> list[str]:
        # A phase measures only some of these (--storm has no server CPU for A beside).
        return [k for k in keys if all(k in r[part] for r in rounds)]

    for part in ("a_alone", "a_beside"):
        out[part] = {k: max(r[part][k] for r in rounds) if k.startswith("p") else
                     sum(r[part][k] for r in rounds) / len(rounds)
                     for k in kept(part, ("p50_ms", "p99_ms", "throughput", "calls", "errors",
                                          "server_cpu"))}
    for part in ("b_alone", "b_beside"):
        out[part] = {k: sum(r[part][k] for r in rounds) / len(rounds)
                     for k in kept(part, ("throughput", "errors", "refused_per_s",
                                          "server_cpu"))}
    out["load_start"] = min(r["load_start"] for r in rounds)
    out["load_end"] = max(r["load_end"] for r in rounds)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--flood"]:
        a = argv[1:]
        flood_main(a[0], a[1], a[2], int(a[3]), float(a[4]), a[5],
                   unique=len(a) > 6 and a[6] == "1")
        return
    ap = argparse.ArgumentParser(prog="bench.service_load --noisy",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("dataset", nargs="?", type=Path, default=locomo_default())
    ap.add_argument("--limit", type=int, default=None,
                    help="Ingest only the first N conversations (per tenant).")
    ap.add_argument("--seconds", type=float, default=10.0, help="Length of each measurement.")
    ap.add_argument("--callers", type=int, default=None,
                    help="Tenant B's concurrent callers (default 64; with --storm 128).")
    ap.add_argument("--quiet-rate", type=float, default=10.0,
                    help="Tenant A's calls per second (0: closed loop, as fast as answered).")
    ap.add_argument("--modes", default=None,
                    help=f"Modes to compare, in order ({', '.join(MODES)}); default "
                         f"{DEFAULT_MODES}, with --storm {STORM_MODES}.")
    ap.add_argument("--storm", action="store_true",
                    help="Both tenants keep the default limits: B's retrying callers are "
                         "mostly refused (a retry storm).")
    ap.add_argument("--unique", action="store_true",
                    help="Every flood call asks a question of its own (none found in the "
                         "query cache).")
    ap.add_argument("--rounds", type=int, default=1,
                    help="Repeat, alternating the order of the schedulers.")
    args = ap.parse_args(argv)
    args.dataset = require_dataset(args.dataset)
    if args.modes is None:
        args.modes = STORM_MODES if args.storm else DEFAULT_MODES
    if args.callers is None:
        args.callers = STORM_CALLERS if args.storm else 64
    modes = [m for m in args.modes.split(",") if m]
    if unknown := [m for m in modes if m not in MODES]:
        ap.error(f"--modes: unknown {', '.join(unknown)} (known: {', '.join(MODES)})")

    from memstrata.config import load_settings
    from memstrata.eval.datasets import load_dataset
    from memstrata.memory import Memory
    from query_service.keys import TenantPolicy, add_key, set_tenant_policy

    parts = {}
    for tenant in (QUIET, FLOOD):
        data = load_dataset(args.dataset, "locomo", tenant_id=tenant)
        users = data.users[: args.limit] if args.limit else data.users
        parts[tenant] = (
            [s for s in data.parsed.sessions if s.scope in set(users)],
            [(q.scope.user_id, q.question) for q in data.questions if q.scope in set(users)])
    sessions = parts[QUIET][0] + parts[FLOOD][0]
    console.print(f"{len(sessions)} sessions over two tenants, "
                  f"{len(parts[QUIET][1])} questions each; load average {load_average():.2f}")
    results: dict[str, Any] = {"load_average_start": load_average(), "seconds": args.seconds,
                               "callers": args.callers, "quiet_rate": args.quiet_rate, "sessions": len(sessions),
                               "storm": args.storm, "unique": args.unique, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-noisy-") as tmp_name:
        tmp = Path(tmp_name)
        data_dir = tmp / "data"
        with Memory.open(load_settings(data_dir=data_dir)) as memory, progress() as bar:
            task = bar.add_task("ingest (turns), both tenants",
                                total=sum(len(s.turns) for s in sessions))
            memory.ingest(sessions, progress=lambda n: bar.advance(task, n))
        keys = tmp / "keys.json"
        key_a, key_b = add_key(keys, QUIET)[1], add_key(keys, FLOOD)[1]
        for tenant in () if args.storm else (QUIET, FLOOD):  # --storm: the defaults
            set_tenant_policy(keys, tenant, TenantPolicy(rate_per_s=1e9, burst=10**9,
                                                         max_concurrent=10**6))
        asks_b = tmp / "asks-flood.json"
        asks_b.write_text(json.dumps(parts[FLOOD][1]))
        service_dir = tmp / "data-service"
        shutil.copytree(data_dir, service_dir)
        plan = [m for r in range(args.rounds) for m in (modes if r % 2 == 0 else modes[::-1])]
        rounds: dict[str, list[dict[str, Any]]] = {}
        with progress() as bar:
            task = bar.add_task("noisy neighbour", total=3 * len(plan))
            for mode in plan:
                rounds.setdefault(mode, []).append(measure_mode(
                    mode, service_dir, keys, key_a, key_b, parts[QUIET][1], asks_b, args,
                    tmp, bar, task))
        results["modes"] = {m: merge_rounds(r) for m, r in rounds.items()}
    results["load_average_end"] = load_average()
    report(results)


def report(results: dict[str, Any]) -> None:
    if results.get("storm"):
        report_storm(results)
        return
    rows = []
    for mode, r in results["modes"].items():
        a0, a1, b0, b1 = r["a_alone"], r["a_beside"], r["b_alone"], r["b_beside"]
        rows.append([mode, a0["p50_ms"], a0["p99_ms"], a1["p50_ms"], a1["p99_ms"],
                     a1["p99_ms"] / a0["p99_ms"], a0["throughput"], a1["throughput"],
                     b0["throughput"], b1["throughput"], b1["throughput"] / b0["throughput"],
                     (a1["throughput"] + b1["throughput"]) / b0["throughput"],
                     f"{int(a0['errors'] + a1['errors'])}/{int(b0['errors'] + b1['errors'])}",
                     f"{r['load_start']:.1f}-{r['load_end']:.1f}"])
    rate = results.get("quiet_rate", 0.0)
    a_is = f"1 caller, {rate:g} calls/s" if rate else "1 closed-loop caller"
    print_table(f"noisy neighbour: tenant A ({a_is}) beside tenant B ({results['callers']} "
                f"callers), Search, {results['seconds']:g} s each; load average "
                f"{results['load_average_start']:.1f} -> {results['load_average_end']:.1f}",
                ["scheduler", "A p50 alone", "A p99 alone", "A p50 beside", "A p99 beside",
                 "A p99 x", "A calls/s alone", "A calls/s beside", "B calls/s alone",
                 "B calls/s beside", "B beside/alone", "A+B beside/B alone", "errors A/B",
                 "load"], rows)
    checks = []
    fair = results["modes"].get("fair")
    if fair is not None:
        ratio = fair["a_beside"]["p99_ms"] / fair["a_alone"]["p99_ms"]
        checks.append(("fair: A's p99 beside the flood <= 3x alone", ratio <= 3.0,
                       f"{ratio:.2f}x"))
        share = fair["b_beside"]["throughput"] / fair["b_alone"]["throughput"]
        checks.append(("fair: B's throughput beside >= 90% of B alone", share >= 0.9,
                       f"{share:.0%}"))
        # A's one caller, served promptly, takes its share of the machine: the calls of
        # both tenants together say whether fairness wasted any of it.
        both = (fair["a_beside"]["throughput"] + fair["b_beside"]["throughput"]) / \
            fair["b_alone"]["throughput"]
        checks.append(("fair: A+B throughput beside >= 90% of B alone (machine not wasted)",
                       both >= 0.9, f"{both:.0%}"))
    finish(results, checks, "noisy_neighbour", plot)


def plot(results: dict[str, Any]) -> None:
    plt = pyplot_or_none()
    if plt is None:
        return
    modes = list(results["modes"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    r = {m: results["modes"][m] for m in modes}
    bars(left, modes, [("A alone", [r[m]["a_alone"]["p99_ms"] for m in modes]),
                       ("A beside B", [r[m]["a_beside"]["p99_ms"] for m in modes])],
         "tenant A Search p99 (ms)", log=True)
    bars(right, modes, [("B alone", [r[m]["b_alone"]["throughput"] for m in modes]),
                        ("B beside A", [r[m]["b_beside"]["throughput"] for m in modes])],
         f"tenant B Search calls/s ({results['callers']} callers)")
    save_figure(plt, fig, f"noisy neighbour (load average {results['load_average_start']:.1f})",
                "noisy_neighbour.png")


def report_storm(results: dict[str, Any]) -> None:
    """``--storm``: A's latency alone and beside B's refused retries; B's served and refused."""
    rows = []
    for mode, r in results["modes"].items():
        a0, a1, b0, b1 = r["a_alone"], r["a_beside"], r["b_alone"], r["b_beside"]
        rows.append([mode, a0["p50_ms"], a0["p99_ms"], a1["p50_ms"], a1["p99_ms"],
                     a1["p99_ms"] / a0["p99_ms"], b0["throughput"], b0["refused_per_s"],
                     b1["throughput"], b1["refused_per_s"],
                     f"{a0['server_cpu']:.0%} / {b0['server_cpu']:.0%} / {b1['server_cpu']:.0%}",
                     f"{int(a0['errors'] + a1['errors'])}/{int(b0['errors'] + b1['errors'])}",
                     f"{r['load_start']:.1f}-{r['load_end']:.1f}"])
    rate = results.get("quiet_rate", 0.0)
    a_is = f"1 caller, {rate:g} calls/s" if rate else "1 closed-loop caller"
    print_table(f"retry storm, default limits: tenant A ({a_is}) beside tenant B "
                f"({results['callers']} callers retrying 10 ms after each refusal), Search, "
                f"{results['seconds']:g} s each; load average "
                f"{results['load_average_start']:.1f} -> {results['load_average_end']:.1f}",
                ["refusals", "A p50 alone", "A p99 alone", "A p50 beside", "A p99 beside",
                 "A p99 x", "B served/s alone", "B refused/s alone", "B served/s beside",
                 "B refused/s beside", "server CPU A / B / A+B", "errors A/B", "load"], rows)
    for mode, r in results["modes"].items():  # the worst p99s above may come from
        if "rounds" in r:                        # different rounds: each round's own
            console.print(f"{mode}: A p99 x per round: " + ", ".join(
                f"{x['a_beside']['p99_ms'] / x['a_alone']['p99_ms']:.2f}x"
                for x in r["rounds"]))
    checks = []
    late = results["modes"].get("refuse-late")
    if late is not None:
        ratio = late["a_beside"]["p99_ms"] / late["a_alone"]["p99_ms"]
        checks.append(("refuse-late: A's p99 beside the storm <= 3x alone", ratio <= 3.0,
                       f"{ratio:.2f}x"))
    finish(results, checks, "noisy_neighbour_storm", plot_storm)


def plot_storm(results: dict[str, Any]) -> None:
    plt = pyplot_or_none()
    if plt is None:
        return
    modes = list(results["modes"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    r = {m: results["modes"][m] for m in modes}
    bars(left, modes, [("A alone", [r[m]["a_alone"]["p99_ms"] for m in modes]),
                       ("A beside the storm", [r[m]["a_beside"]["p99_ms"] for m in modes])],
         "tenant A Search p99 (ms)", log=True)
    bars(right, modes, [("B served/s", [r[m]["b_beside"]["throughput"] for m in modes]),
                        ("B refused/s", [r[m]["b_beside"]["refused_per_s"] for m in modes])],
         f"tenant B calls/s beside A ({results['callers']} callers)")
    save_figure(plt, fig, f"retry storm, default limits (load average "
                f"{results['load_average_start']:.1f})", "noisy_neighbour_storm.png")


def finish(results: dict[str, Any], checks: list[tuple[str, bool, str]], name: str,
           draw: Any) -> None:
    """Print the checks, keep them with the numbers in ``<name>.json`` and draw the plot."""
    for check, ok, value in checks:
        console.print(f"{verdict(ok)} {check}: {value}")
    results["checks"] = [{"check": n, "ok": ok, "value": v} for n, ok, v in checks]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / f"{name}.json").write_text(json.dumps(results, indent=1))
    draw(results)


def bars(ax: Any, modes: list[str], series: list[tuple[str, list[float]]], ylabel: str,
         log: bool = False) -> None:
    """Two bar series side by side per mode."""
    w = 0.38
    for off, (label, values) in zip((-w / 2, w / 2), series):
        ax.bar([i + off for i in range(len(modes))], values, w, label=label)
    ax.set_xticks(list(range(len(modes))), modes)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend()


def save_figure(plt: Any, fig: Any, title: str, file: str) -> None:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(OUT_DIR / file, dpi=100)
    plt.close(fig)
    console.print(f"plot: {OUT_DIR / file}")


if __name__ == "__main__":
    main()
