"""The gRPC query service under load vs the library in-process, at the same concurrency.

```bash
.venv/bin/python -m bench.service_load [DATASET] [--limit N] [--callers 1,8,64] \
    [--search-calls 400] [--answer-calls 120] [--read-threads N] [--pool-sweep 1,2,4,8] \
    [--baseline-tree PATH] [--cpu-calls 160] [--cpu-variants old,new,old-cached,new-cached]
```

LoCoMo dev (the first ``--limit`` conversations) is ingested into a temporary
embedded store. Then, for each number of concurrent callers:

* **library**: that many threads call ``Memory.search`` / ``Controller.answer``
  (offline rule controller) on one shared Memory in this process;
* **service**: ``memstrata``'s query service runs in its own process over a
  copy of the same data dir (the embedded stores admit one process each),
  and that many asyncio tasks call it through one
  :class:`~memstrata.client.AsyncMemoryClient` channel.

Both paths ask the same questions in the same order, and each measurement
on one path is followed at once by the same measurement on the other, so
both see the same load on a shared machine. Printed: throughput
(calls/s) and p50/p99 latency per path, the service/library throughput
ratio, and errors. ``--pool-sweep`` reruns the service at 8 callers with each
pool size (read and answer pools alike), to see whether more threads help
(the stores hold the GIL for part of each call only). Targets: no errors at 64 callers; service Search throughput >= 80% of
the library's at 8 callers; service Search p99 < 50 ms at 8 callers. Results go
to ``bench/out/service_load.json``.

``--noisy`` runs the noisy-neighbour comparison instead (a quiet tenant beside
another tenant's flood, FIFO vs fair scheduling; ``bench/noisy_neighbour.py``).

Then the CPU phase: service-process CPU seconds per call (``/proc/<pid>/stat``)
at 8 callers, for each of ``--cpu-variants`` side by side over the same
questions: ``old`` (``--baseline-tree``, the previous commit's code) and ``new``
(this code as configured), and the same two with every measured question asked
once before (``old-cached``, ``new-cached``: the query vectors come from the
cache, so the encoder is skipped and the rest of a Search is compared on its
own); ``cache-off``, ``float`` (this code with the previous float encoder) and
``int8-queries`` (float documents, integer queries) are there on request. The
baseline and the float variants read a data dir indexed with float products
(ingested once more for them). Target: Search CPU per call new/old <= 0.5,
Answer not worse.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench._common import locomo_default, require_dataset
from bench._common import OUT_DIR, ROOT, console, load_average, percentiles_ms, print_table
from bench._common import progress, ratio_interval, verdict
from bench.service_process import ServiceProcess

DEFAULT_DATASET = locomo_default()  # LOCOMO_PATH
TENANT = "eval"


# -- the measured loops -----------------------------------------------------------

#: The first few distinct failures of the run (kind and message), for the report.
FAILURES: dict[str, int] = {}


def _failed(exc: BaseException) -> None:
    kind = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    if kind in FAILURES or len(FAILURES) < 8:
        FAILURES[kind] = FAILURES.get(kind, 0) + 1


def _stats(latencies: list[float], wall: float, errors: int) -> dict[str, Any]:
    p50, p99 = percentiles_ms(latencies) if latencies else (float("nan"), float("nan"))
    return {"calls": len(latencies), "errors": errors, "wall_s": wall,
            "throughput": len(latencies) / wall if wall > 0 else 0.0, "p50_ms": p50,
            "p99_ms": p99, "latencies": latencies}


def merge(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rounds of one measurement as one: all calls over all wall time, percentiles of all."""
    lat = [x for r in runs for x in r["latencies"]]
    return _stats(lat, sum(r["wall_s"] for r in runs), sum(r["errors"] for r in runs))


def run_threads(fn: Callable[[int], object], calls: int, callers: int) -> dict[str, float]:
    """``callers`` threads share ``calls`` calls of ``fn(i)``."""
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()
    counter = iter(range(calls))

    def worker() -> None:
        nonlocal errors
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            try:
                fn(i)
            except Exception as exc:  # noqa: BLE001 - counted
                with lock:
                    errors += 1
                    _failed(exc)
                continue
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)

    start = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        for f in [pool.submit(worker) for _ in range(callers)]:
            f.result()
    return _stats(lat, time.perf_counter() - start, errors)


async def run_tasks(fn: Callable[[int], Any], calls: int, callers: int) -> dict[str, float]:
    """``callers`` asyncio tasks share ``calls`` awaited calls of ``fn(i)``."""
    lat: list[float] = []
    errors = 0
    counter = iter(range(calls))

    async def worker() -> None:
        nonlocal errors
        for i in counter:
            t0 = time.perf_counter()
            try:
                await fn(i)
            except Exception as exc:  # noqa: BLE001 - counted
                errors += 1
                _failed(exc)
                continue
            lat.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(callers)))
    return _stats(lat, time.perf_counter() - start, errors)


# -- the service in its own process ------------------------------------------------

def serve_bare(data_dir: str, port: int, threads: int, kind: str) -> None:
    """A Search-only server without interceptors, scheduler or metrics (``BENCH_SERVER``).

    ``aio-bare``: ``grpc.aio`` with the work in a thread pool, as the service
    runs it; ``sync-bare``: grpc's synchronous server, the work in its own
    handler thread (no hand-off between an event loop and a pool). Only for
    comparing the two servers' own cost per call (``--server-kinds``).
    """
    import grpc

    from memstrata.config import load_settings
    from memstrata.memory import Memory
    from memstrata.model import Scope
    from memstrata.rpc import memory_pb2 as pb
    from memstrata.rpc import memory_pb2_grpc as pb_grpc
    from memstrata.rpc.convert import hit_to_wire
    from grpc_health.v1 import health, health_pb2_grpc

    memory = Memory.open(load_settings(data_dir=Path(data_dir)))

    def work(request: Any) -> Any:
        scope = Scope(tenant_id=TENANT, user_id=request.user_id)
        hits = memory.search(scope, list(request.queries))
        return pb.SearchReply(tenant_id=TENANT, user_id=request.user_id,
                              hits=[hit_to_wire(h) for h in hits])

    try:
        if kind == "sync-bare":
            class SyncSearch(pb_grpc.MemoryServiceServicer):
                def Search(self, request: Any, context: Any) -> Any:
                    return work(request)

            server = grpc.server(ThreadPoolExecutor(threads))
            pb_grpc.add_MemoryServiceServicer_to_server(SyncSearch(), server)
            health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
            server.add_insecure_port(f"127.0.0.1:{port}")
            server.start()
            done = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: done.set())
            done.wait()
            server.stop(1)
            return

        async def run() -> None:
            from grpc_health.v1._async import HealthServicer

            pool = ThreadPoolExecutor(threads)

            class AioSearch(pb_grpc.MemoryServiceServicer):
                async def Search(self, request: Any, context: Any) -> Any:
                    return await asyncio.get_running_loop().run_in_executor(pool, work, request)

            server = grpc.aio.server()
            pb_grpc.add_MemoryServiceServicer_to_server(AioSearch(), server)
            health_pb2_grpc.add_HealthServicer_to_server(HealthServicer(), server)
            server.add_insecure_port(f"127.0.0.1:{port}")
            await server.start()
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
            await server.stop(1)

        asyncio.run(run())
    finally:
        memory.close()


def serve_main(data_dir: str, port: int, keys: str, read_threads: int,
               answer_threads: int) -> None:
    """``--serve``: the query service over ``data_dir`` until SIGTERM."""
    kind = os.environ.get("BENCH_SERVER", "service")
    # A variant's own pool size (BENCH_THREADS), e.g. one thread: fewer threads contend for the GIL.
    if os.environ.get("BENCH_THREADS"):
        read_threads = answer_threads = int(os.environ["BENCH_THREADS"])
    if kind != "service":
        serve_bare(data_dir, port, read_threads, kind)
        return
    from memstrata.config import load_settings
    from memstrata.controller.config import ControllerSettings
    from memstrata.limits import TurnLimits
    from memstrata.memory import Memory
    from query_service.server import run_server
    from query_service.settings import ServiceSettings

    memory = Memory.open(load_settings(data_dir=Path(data_dir)))
    settings = ServiceSettings(port=port, keys_file=Path(keys), read_threads=read_threads,
                               answer_threads=answer_threads, grace_s=2)
    try:
        asyncio.run(run_server(memory, settings,
                               controller_settings=ControllerSettings(policy="rules"),
                               turn_limits=TurnLimits()))
    finally:
        memory.close()


def split_main(data_dir: str, dataset: str, calls: int) -> None:
    """``--split``: one thread's CPU per Search in-process, by part, as JSON on stdout.

    Every question is asked once first, so the query vectors come from the
    cache and the encoder is left out (it is measured on its own elsewhere).
    Store calls are timed by wrapping them; what is left of ``Memory.search``
    is the retriever's Python; ``wire`` is building and serializing the
    ``SearchReply`` (the service's work on the same hits). Run with another
    tree on ``PYTHONPATH`` to measure that tree's code.
    """
    from collections import defaultdict

    from memstrata.config import load_settings
    from memstrata.eval.datasets import load_dataset
    from memstrata.memory import Memory
    from memstrata.rpc import memory_pb2 as pb
    from memstrata.rpc.convert import hit_to_wire

    qs = load_dataset(Path(dataset), "locomo", tenant_id=TENANT).questions[:calls]
    memory = Memory.open(load_settings(data_dir=Path(data_dir)), read_only=True)
    parts: defaultdict[str, float] = defaultdict(float)

    def timed(obj: Any, name: str, label: str) -> None:
        fn = getattr(obj, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                parts[label] += time.thread_time() - t

        setattr(obj, name, wrapper)

    r = memory.retriever
    timed(r.vectors, "search", "Qdrant Edge")
    timed(r.lexical, "search", "tantivy L0")
    if r.session_lexical is not None:
        timed(r.session_lexical, "search", "tantivy sessions")
    timed(r.docs, "get_units", "SQLite units")
    timed(r.docs, "get_turns", "SQLite turns")
    try:
        for q in qs:
            memory.search(q.scope, q.question)
        best: dict[str, float] | None = None
        for _ in range(3):  # the least of three rounds: the machine is shared
            parts.clear()
            search = wire = 0.0
            for q in qs:
                t = time.thread_time()
                hits = memory.search(q.scope, q.question)
                t1 = time.thread_time()
                pb.SearchReply(tenant_id=q.scope.tenant_id, user_id=q.scope.user_id,
                               hits=[hit_to_wire(h) for h in hits]).SerializeToString()
                search += t1 - t
                wire += time.thread_time() - t1
            row = {k: 1000 * v / len(qs) for k, v in parts.items()}
            row["retrieval Python"] = 1000 * (search - sum(parts.values())) / len(qs)
            row["wire (build + serialize)"] = 1000 * wire / len(qs)
            row["total"] = 1000 * (search + wire) / len(qs)
            if best is None or row["total"] < best["total"]:
                best = row
        print(json.dumps(best))
    finally:
        memory.close()


def split_phase(data_dir: Path, dataset: Path, calls: int,
                baseline: Path | None, float_dir: Path | None = None
                ) -> dict[str, dict[str, float]]:
    """:func:`split_main` for the baseline tree and this one, side by side.

    Both run at the same time, each in its own process over its own copy of the
    data dir (Qdrant Edge locks its files), so both meet the same load on a
    shared machine.
    """
    trees = [(n, t) for n, t in ((CPU_VARIANTS["old"][0], baseline),
                                 (CPU_VARIANTS["new"][0], ROOT)) if t is not None]
    procs = []
    for i, (name, tree) in enumerate(trees):
        copy = data_dir.parent / f"data-split-{i}"
        # The baseline indexed with float products (its default): its own data dir.
        source = float_dir if tree is baseline and float_dir is not None else data_dir
        shutil.copytree(source, copy)
        # This file's code over the other tree's packages (that tree's bench has no --split).
        argv = [str(ROOT / "bench" / "service_load.py"), "--split", str(copy), str(dataset),
                str(calls)]
        procs.append((name, subprocess.Popen(
            [sys.executable, "-c", "import runpy, sys; sys.argv = sys.argv[1:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')", *argv],
            cwd=tree, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(tree)})))
    out = {}
    for name, proc in procs:
        stdout, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"the split of {name} failed ({proc.returncode})")
        out[name] = json.loads(stdout.strip().splitlines()[-1])
    return out


def report_split(split: dict[str, dict[str, float]]) -> None:
    names = list(split)
    parts = list(dict.fromkeys(k for row in split.values() for k in row))
    print_table("one thread's CPU per Search in-process, query vectors cached (ms)",
                ["part", *names], [[p, *(split[n].get(p, 0.0) for n in names)] for p in parts])


# -- the bench ------------------------------------------------------------------------

class LibraryPath:
    """The library in this process: threads calling one Memory and one Controller."""

    def __init__(self, data_dir: Path, questions: Sequence[Any]) -> None:
        from memstrata.config import load_settings
        from memstrata.controller.config import ControllerSettings
        from memstrata.controller.run import Controller
        from memstrata.memory import Memory

        self.memory = Memory.open(load_settings(data_dir=data_dir))
        self.controller = Controller(self.memory, ControllerSettings(policy="rules"))
        self.questions = questions

    def search(self, i: int) -> object:
        q = self.questions[i % len(self.questions)]
        return self.memory.search(q.scope, q.question)

    def answer(self, i: int) -> object:
        q = self.questions[i % len(self.questions)]
        return self.controller.answer(q.scope, q.question, q.asked_on)

    def measure(self, op: str, calls: int, callers: int) -> dict[str, float]:
        return run_threads(getattr(self, op), calls, callers)

    def close(self) -> None:
        self.memory.close()


class ServicePath:
    """The service in its own process, called by asyncio tasks over one channel."""

    def __init__(self, address: str, key: str, questions: Sequence[Any]) -> None:
        self.loop = asyncio.new_event_loop()
        self.questions = questions
        #: Added to every call's index: the CPU phase asks each question once.
        self.offset = 0
        from memstrata.client import AsyncMemoryClient

        async def make() -> Any:
            return AsyncMemoryClient(address, api_key=key, timeout_s=120)

        self.client = self.loop.run_until_complete(make())

    async def search(self, i: int) -> object:
        q = self.questions[(self.offset + i) % len(self.questions)]
        return await self.client.search(q.scope, q.question)

    async def answer(self, i: int) -> object:
        q = self.questions[(self.offset + i) % len(self.questions)]
        return await self.client.answer(q.scope, q.question, q.asked_on)

    def measure(self, op: str, calls: int, callers: int) -> dict[str, float]:
        return self.loop.run_until_complete(run_tasks(getattr(self, op), calls, callers))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


#: The CPU phase's services by short name: (label, baseline tree?, extra environment,
#: query vectors cached first?). ``*-cached`` variants ask every measured question once
#: before measuring, so the query encoder is skipped (its cost belongs elsewhere) and
#: what is left is retrieval, stores, the gRPC layer and scheduling.
CPU_VARIANTS: dict[str, tuple[str, bool, dict[str, str], bool]] = {
    "old": ("old (baseline tree)", True, {}, False),
    "new": ("new (default)", False, {}, False),
    "old-cached": ("old, query vectors cached", True, {}, True),
    "new-cached": ("new, query vectors cached", False, {}, True),
    "cache-off": ("new, query cache off", False, {"MEMSTRATA_QUERY_CACHE_SIZE": "0"}, False),
    # The previous encoder arithmetic through today's code (float products on both sides),
    # and the old opt-in (float documents, integer queries: LoCoMo session R@5 -0.005).
    "float": ("new, float encoder", False, {"MEMSTRATA_EMBED_ARITHMETIC": "float"}, False),
    "int8-queries": ("new, float documents, int8 queries", False,
                     {"MEMSTRATA_EMBED_ARITHMETIC": "float",
                      "MEMSTRATA_EMBED_QUERY_ARITHMETIC": "int8"}, False),
    # Every query encoded and searched by vector, as before the dense side was skipped
    # for queries BM25's best hit fully covers.
    "no-dense-skip": ("new, every query encoded", False, {"MEMSTRATA_DENSE_SKIP": "false"},
                      False),
    "embed-1t": ("new, encoder on 1 thread", False, {"MEMSTRATA_EMBED_THREADS": "1"}, False),
    # Qdrant Edge's search pool of one thread (one per CPU by default): no fan-out per query.
    "qdrant-1t": ("new, Qdrant Edge search on 1 thread", False,
                  {"MEMSTRATA_QDRANT_EDGE_SEARCH_THREADS": "1"}, False),
    # Search-only servers without interceptors, scheduler or metrics (serve_bare): what
    # grpc.aio with a pool costs against grpc's synchronous server, the same work inside.
    "new-1t": ("new, pools of 1 thread", False, {"BENCH_THREADS": "1"}, False),
    "new-cached-1t": ("new, cached, pools of 1 thread", False, {"BENCH_THREADS": "1"}, True),
    "new-cached-4t": ("new, cached, pools of 4 threads", False, {"BENCH_THREADS": "4"}, True),
    "aio-bare-cached": ("bare grpc.aio + pool, cached", False, {"BENCH_SERVER": "aio-bare"},
                        True),
    "sync-bare-cached": ("bare grpc sync server, cached", False, {"BENCH_SERVER": "sync-bare"},
                         True),
}


def _ops(env: dict[str, str]) -> tuple[str, ...]:
    """The calls a variant serves (a bare server serves Search only)."""
    return ("search",) if "BENCH_SERVER" in env else ("search", "answer")


def cpu_variants(baseline: Path | None, names: Sequence[str] = ("old", "new", "old-cached",
                                                                "new-cached")
                 ) -> list[tuple[str, Path, dict[str, str], bool]]:
    """The chosen variants (the baseline's only when a baseline tree is given)."""
    out = []
    for name in names:
        label, old, env, cached = CPU_VARIANTS[name]
        if old and baseline is None:
            continue
        out.append((label, baseline if old and baseline is not None else ROOT, env, cached))
    return out


def _float_indexed(tree: Path, env: dict[str, str]) -> bool:
    """Whether a variant reads a data dir indexed with float products (the baseline's)."""
    return tree != ROOT or env.get("MEMSTRATA_EMBED_ARITHMETIC") == "float"


def cpu_phase(service_dir: Path, keys: Path, key: str, questions: Sequence[Any],
              args: argparse.Namespace, float_dir: Path | None = None) -> dict[str, Any]:
    """Service-process CPU per call for each variant, same questions, same load.

    Every variant serves its own copy of the data dir in its own process; they
    are measured in alternation, round by round, so a change of the machine's
    load touches all alike. Each question is asked once per variant (a query
    cache starts cold: its hits come only from repeats inside one call, as in
    the controller's Answer). CPU is read from ``/proc/<pid>/stat``.
    """
    variants = cpu_variants(args.baseline_tree, args.cpu_variants.split(","))
    fresh = len(questions) - args.cpu_warmup
    if args.rounds * args.cpu_calls > fresh:
        console.print(f"[yellow]{args.rounds} rounds x {args.cpu_calls} calls ask more than "
                      f"the {fresh} questions the warm-up leaves: the later ones repeat "
                      f"(their query vectors cached)[/yellow]")
    procs: list[tuple[str, ServiceProcess, ServicePath]] = []
    out: dict[str, Any] = {}
    calls = {"search": args.cpu_calls, "answer": max(1, args.cpu_calls // 2)}
    ops = {label: _ops(env) for label, _, env, _ in variants}
    try:
        for i, (name, tree, env, _) in enumerate(variants):
            copy = service_dir.parent / f"data-cpu-{i}"
            source = service_dir
            if _float_indexed(tree, env):
                if float_dir is None:
                    raise SystemExit(f"{name}: needs the float-indexed data dir")
                source = float_dir
            shutil.copytree(source, copy)
            svc = ServiceProcess(copy, keys, args.read_threads, args.answer_threads,
                                 tree=tree, env=env)
            procs.append((name, svc, None))  # type: ignore[arg-type]
        for j, (name, svc, _) in enumerate(procs):
            svc.wait_healthy()
            path = ServicePath(svc.address, key, questions)
            # Warm-up questions from the end, so the measured ones (from the start)
            # meet no query vector the warm-up cached.
            path.offset = max(0, len(questions) - args.cpu_warmup)
            # Enough calls for a fair scheduler's service-time estimate to forget a
            # cold first call (an encoder loaded on first use): with it, a burst of 8
            # callers is shed as "would wait past the queue limit".
            path.measure("search", args.cpu_warmup, 1)
            if "answer" in ops[name]:
                path.measure("answer", max(1, args.warmup // 2), 1)
            if variants[j][3]:  # every measured question once: its query vectors cached
                for r in range(args.rounds):
                    for op in ops[name]:
                        path.offset = r * calls[op]
                        path.measure(op, calls[op], 8)
            procs[j] = (name, svc, path)
        with progress() as bar:
            task = bar.add_task("service CPU per call (8 callers)",
                                total=args.rounds * len(procs) * 2)
            for r in range(args.rounds):
                order = procs if r % 2 == 0 else procs[::-1]
                for op in ("search", "answer"):
                    for name, svc, path in order:
                        if op not in ops[name]:
                            bar.advance(task)
                            continue
                        path.offset = r * calls[op]
                        before = svc.cpu_s()
                        stats = path.measure(op, calls[op], 8)
                        used = svc.cpu_s() - before
                        cell = out.setdefault(name, {}).setdefault(op, {"cpu_s": 0.0, "runs": []})
                        cell["cpu_s"] += used
                        cell["runs"].append(stats)
                        cell.setdefault("round_cpu_ms", []).append(
                            1000 * used / max(1, stats["calls"]))
                        bar.advance(task)
    finally:
        for _, svc, path in procs:
            if path is not None:
                path.close()
            svc.stop()
    for ops in out.values():
        for cell in ops.values():
            merged = merge(cell.pop("runs"))
            cell.update({k: v for k, v in merged.items() if k != "latencies"})
            cell["cpu_ms_per_call"] = 1000 * cell["cpu_s"] / max(1, merged["calls"])
    return out


def report_cpu(cpu: dict[str, Any], load: tuple[float, float]) -> list[tuple[str, bool, str]]:
    names = list(cpu)
    rows = []
    for op in ("search", "answer"):
        serving = [n for n in names if op in cpu[n]]
        if not serving:
            continue
        base = cpu[serving[0]][op]["cpu_ms_per_call"]
        for name in serving:
            if op not in cpu[name]:
                continue
            c = cpu[name][op]
            rows.append([op, name, c["calls"], c["cpu_ms_per_call"],
                         c["cpu_ms_per_call"] / base, c["throughput"], c["p50_ms"],
                         c["p99_ms"], c["errors"]])
    print_table(f"service-process CPU per call at 8 callers (load {load[0]:.1f} -> "
                f"{load[1]:.1f})",
                ["op", "service", "calls", "CPU ms/call", "vs first", "calls/s",
                 "p50 ms", "p99 ms", "errors"], rows)
    checks = []
    old, new = CPU_VARIANTS["old"][0], CPU_VARIANTS["new"][0]
    if old in cpu and new in cpu:
        for op, target in (("search", 0.5), ("answer", 1.0)):
            ratio = cpu[new][op]["cpu_ms_per_call"] / cpu[old][op]["cpu_ms_per_call"]
            # Each round's ratio too: how far the machine's drift moves it within a run.
            rounds = [n / o for n, o in zip(cpu[new][op].get("round_cpu_ms", []),
                                            cpu[old][op].get("round_cpu_ms", []))]
            detail = f"{ratio:.2f} (rounds {', '.join(f'{r:.2f}' for r in rounds)}"
            if len(rounds) > 1:
                mean, low, high = ratio_interval(rounds)
                cpu[new][op]["round_ratio"] = {"geo_mean": mean, "low": low, "high": high}
                detail += f"; geometric mean {mean:.2f}, 95% interval {low:.2f} .. {high:.2f}"
            checks.append((f"{op} CPU per call new/old <= {target:.1f}", ratio <= target,
                           detail + ")"))
    old, new = CPU_VARIANTS["old-cached"][0], CPU_VARIANTS["new-cached"][0]
    if old in cpu and new in cpu:  # reported, not a target: the encoder's share is elsewhere
        ratio = cpu[new]["search"]["cpu_ms_per_call"] / cpu[old]["search"]["cpu_ms_per_call"]
        console.print(f"Search CPU per call with query vectors cached (encoder skipped), "
                      f"new/old: {ratio:.2f}")
    return checks


def main() -> None:
    if "--noisy" in sys.argv[1:]:  # the noisy-neighbour run: bench/noisy_neighbour.py
        from bench.noisy_neighbour import main as noisy

        noisy([a for a in sys.argv[1:] if a != "--noisy"])
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--split":
        split_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if len(sys.argv) == 7 and sys.argv[1] == "--serve":
        a = sys.argv[2:]
        serve_main(a[0], int(a[1]), a[2], int(a[3]), int(a[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--limit", type=int, default=None,
                    help="Ingest only the first N conversations (and ask their questions).")
    ap.add_argument("--callers", default="1,8,64")
    ap.add_argument("--search-calls", type=int, default=400)
    ap.add_argument("--answer-calls", type=int, default=120)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2,
                    help="Split the calls into rounds, alternating which path goes first.")
    # Default: the service's own default (one thread per core, at most 4).
    ap.add_argument("--read-threads", type=int, default=None)
    ap.add_argument("--answer-threads", type=int, default=None)
    ap.add_argument("--pool-sweep", default="",
                    help="Pool sizes to rerun the service at 8 callers with (1,2,4,8).")
    ap.add_argument("--baseline-tree", type=Path, default=None,
                    help="A checkout of the previous commit (git worktree add PATH 6aca85e):"
                         " its service is measured beside this one for CPU per call.")
    ap.add_argument("--cpu-calls", type=int, default=160,
                    help="Search calls per variant and round in the CPU phase (0: skip it).")
    ap.add_argument("--cpu-warmup", type=int, default=100,
                    help="Search calls at one caller on each CPU-phase service before it is "
                         "measured (other questions than the measured ones).")
    ap.add_argument("--split-calls", type=int, default=300,
                    help="Questions for the in-process split of a Search's CPU by part, old "
                         "and new (0: skip it).")
    ap.add_argument("--cpu-variants", default="old,new,old-cached,new-cached",
                    help="Services of the CPU phase, of: " + ", ".join(CPU_VARIANTS)
                         + " (old*: only with --baseline-tree; *-cached: encoder skipped).")
    args = ap.parse_args()
    args.dataset = require_dataset(args.dataset)
    if args.read_threads is None or args.answer_threads is None:
        from query_service.settings import ServiceSettings

        default = ServiceSettings()
        args.read_threads = args.read_threads or default.read_threads
        args.answer_threads = args.answer_threads or default.answer_threads
    callers = [int(x) for x in args.callers.split(",") if x]

    from memstrata.config import load_settings
    from memstrata.eval.datasets import load_dataset
    from memstrata.memory import Memory
    from query_service.keys import TenantPolicy, add_key, set_tenant_policy

    data = load_dataset(args.dataset, "locomo", tenant_id=TENANT)
    users = data.users[: args.limit] if args.limit else data.users
    sessions = [s for s in data.parsed.sessions if s.scope in set(users)]
    questions = [q for q in data.questions if q.scope in set(users)]
    console.print(f"{len(users)} conversations, {len(sessions)} sessions, "
                  f"{len(questions)} questions; load average {load_average():.2f}")
    env = load_settings()
    results: dict[str, Any] = {"load_average_start": load_average(), "users": len(users),
                               "sessions": len(sessions),
                               "questions": len(questions), "callers": callers,
                               "read_threads": args.read_threads,
                               "answer_threads": args.answer_threads,
                               # Both paths read the same MEMSTRATA_* environment.
                               "query_arithmetic": (env.embed_query_arithmetic
                                                    or env.embed_arithmetic),
                               "spin_wait": env.embed_spin_wait}
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-svc-") as tmp:
        data_dir = Path(tmp) / "data"
        with Memory.open(load_settings(data_dir=data_dir)) as memory, progress() as bar:
            task = bar.add_task("ingest (turns)", total=sum(len(s.turns) for s in sessions))
            memory.ingest(sessions, progress=lambda n: bar.advance(task, n))
        float_dir: Path | None = None
        if args.baseline_tree is not None or any(
                _float_indexed(ROOT, CPU_VARIANTS[n][2]) for n in args.cpu_variants.split(",")):
            # The baseline (and the float variants) index with float products: the
            # same sessions into a data dir of their own.
            float_dir = Path(tmp) / "data-float"
            with Memory.open(load_settings(data_dir=float_dir, embed_arithmetic="float")
                             ) as memory, progress() as bar:
                task = bar.add_task("ingest, float encoder (turns)",
                                    total=sum(len(s.turns) for s in sessions))
                memory.ingest(sessions, progress=lambda n: bar.advance(task, n))
        keys = Path(tmp) / "keys.json"
        key = add_key(keys, TENANT)[1]
        set_tenant_policy(keys, TENANT, TenantPolicy(rate_per_s=1e9, burst=10**9,
                                                     max_concurrent=10**6))

        service_dir = Path(tmp) / "data-service"
        shutil.copytree(data_dir, service_dir)
        library = LibraryPath(data_dir, questions)
        svc = ServiceProcess(service_dir, keys, args.read_threads, args.answer_threads)
        service: ServicePath | None = None
        results["library"], results["service"] = {}, {}
        try:
            svc.wait_healthy()
            service = ServicePath(svc.address, key, questions)
            for path in (library, service):
                for _ in range(args.warmup):
                    path.measure("search", 1, 1), path.measure("answer", 1, 1)
            plan = [(op, c) for c in callers for op in ("search", "answer")]
            runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
            with progress() as bar:
                task = bar.add_task("library and service, side by side",
                                    total=len(plan) * args.rounds)
                for r in range(args.rounds):
                    for op, c in plan:
                        calls = args.search_calls if op == "search" else args.answer_calls
                        # Alternate which path goes first, so neither always meets a
                        # cold cache or the other's leftovers.
                        order: list[tuple[str, LibraryPath | ServicePath]] = [
                            ("library", library), ("service", service)]
                        for name, path in order if r % 2 == 0 else order[::-1]:
                            runs.setdefault((name, f"{op}/{c}"), []).append(
                                path.measure(op, max(1, calls // args.rounds), c))
                        bar.advance(task)
            for (name, cell), measured in runs.items():
                results[name][cell] = merge(measured)
        finally:
            if service is not None:
                service.close()
            svc.stop()
            library.close()
        if args.split_calls:
            results["split"] = split_phase(data_dir, args.dataset, args.split_calls,
                                           args.baseline_tree, float_dir)
        if args.cpu_calls:
            results["cpu_load_start"] = load_average()
            results["cpu"] = cpu_phase(service_dir, keys, key, questions, args, float_dir)
            results["cpu_load_end"] = load_average()
        sweep = [int(x) for x in args.pool_sweep.split(",") if x]
        results["pool_sweep"] = {}
        with progress() as bar:
            task = bar.add_task("pool sweep (8 callers)", total=len(sweep))
            for threads in sweep:
                svc = ServiceProcess(service_dir, keys, threads, threads)
                try:
                    svc.wait_healthy()
                    service = ServicePath(svc.address, key, questions)
                    service.measure("search", 20, 1)
                    service.measure("answer", 5, 1)
                    results["pool_sweep"][str(threads)] = {  # one round: no library here
                        "search": service.measure("search", args.search_calls, 8),
                        "answer": service.measure("answer", args.answer_calls, 8)}
                    service.close()
                finally:
                    svc.stop()
                bar.advance(task)
    results["load_average_end"] = load_average()
    report(results)


def report(results: dict[str, Any]) -> None:
    lib, svc = results["library"], results["service"]
    rows = []
    for op in ("search", "answer"):
        for c in results["callers"]:
            a, b = lib[f"{op}/{c}"], svc[f"{op}/{c}"]
            rows.append([op, c, a["throughput"], b["throughput"],
                         b["throughput"] / a["throughput"] if a["throughput"] else float("nan"),
                         a["p50_ms"], b["p50_ms"], a["p99_ms"], b["p99_ms"],
                         f"{a['errors']}/{b['errors']}"])
    print_table(f"service vs library ({results['sessions']} sessions, read pool "
                f"{results['read_threads']}, answer pool {results['answer_threads']}, query "
                f"arithmetic {results.get('query_arithmetic', 'float')}; load "
                f"{results['load_average_start']:.1f} -> {results['load_average_end']:.1f})",
                ["op", "callers", "lib calls/s", "svc calls/s", "svc/lib", "lib p50 ms",
                 "svc p50 ms", "lib p99 ms", "svc p99 ms", "errors lib/svc"], rows)
    if results.get("pool_sweep"):
        print_table("service at 8 callers by pool size (read and answer pools)",
                    ["threads", "search calls/s", "search p50 ms", "search p99 ms",
                     "answer calls/s", "answer p50 ms", "answer p99 ms", "errors"],
                    [[int(t), r["search"]["throughput"], r["search"]["p50_ms"],
                      r["search"]["p99_ms"], r["answer"]["throughput"], r["answer"]["p50_ms"],
                      r["answer"]["p99_ms"], r["search"]["errors"] + r["answer"]["errors"]]
                     for t, r in results["pool_sweep"].items()])
    checks = []
    top = max(results["callers"])
    errors = svc[f"search/{top}"]["errors"] + svc[f"answer/{top}"]["errors"]
    checks.append((f"no service errors at {top} callers", errors == 0, f"{errors} errors"))
    if 8 in results["callers"]:
        ratio = svc["search/8"]["throughput"] / lib["search/8"]["throughput"]
        checks.append(("service Search throughput >= 80% of library at 8 callers",
                       ratio >= 0.8, f"{ratio:.0%}"))
        p99 = svc["search/8"]["p99_ms"]
        checks.append(("service Search p99 < 50 ms at 8 callers", p99 < 50, f"{p99:.1f} ms"))
    if results.get("split"):
        report_split(results["split"])
    if results.get("cpu"):
        checks += report_cpu(results["cpu"], (results["cpu_load_start"],
                                              results["cpu_load_end"]))
    for kind, n in FAILURES.items():
        console.print(f"failed calls: {n} x {kind}")
    results["failures"] = dict(FAILURES)
    for name, ok, value in checks:
        console.print(f"{verdict(ok)} {name}: {value}")
    results["checks"] = [{"check": n, "ok": ok, "value": v} for n, ok, v in checks]

    def strip(tree: Any) -> Any:  # raw latencies stay out of the file
        if isinstance(tree, dict):
            return {k: strip(v) for k, v in tree.items() if k != "latencies"}
        return tree

    results = strip(results)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "service_load.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
