"""Ray workers: cold L1 first reads with and without pre-warming, and rollout throughput.

    .venv/bin/python -m bench.workers [--dataset PATH] [--conversations 2] [--questions 24]

The dataset is LoCoMo (``--dataset``, default ``$LOCOMO_PATH``); the
first ``--conversations`` of it are ingested into a temporary embedded store,
offline. Three parts, in one run:

1. First read of a cold session's L1, without and with pre-warming (policy
   ``recent`` fed the sessions' L0 reports), for the extractive builder and for
   ``FixedLatencyBuilder`` (bench/doubles.py, a TEST DOUBLE: 300 ms per build).
2. Rollout throughput, offline rules controller: in-process vs Ray with 1 and 2
   rollout actors on a local Ray (2 CPUs), all reading through the run's own
   gRPC service (embedded stores).
3. With ``FixedLatencyChat`` (a TEST DOUBLE chat client, 300 ms per LLM call) and
   the LLM controller: in-process, 1 Ray actor, and 8 actors over two worker
   nodes of a ``ray.cluster_utils.Cluster``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from bench._common import OUT_DIR, ROOT, console, load_average, print_table

LATENCY_S = 0.3


def _dataset(path: Path, conversations: int) -> Any:
    from memstrata.eval.datasets import load_dataset

    data = load_dataset(path, "locomo")
    users = data.users[:conversations]
    data.parsed.sessions = [s for s in data.parsed.sessions if s.scope in users]
    data.questions = [q for q in data.questions if q.scope in users]
    return data


def _reports(sessions: list[Any]) -> list[bytes]:
    return [json.dumps({"tenant_id": s.scope.tenant_id, "user_id": s.scope.user_id,
                        "session_id": s.meta.session_id}).encode() for s in sessions]


def first_reads(memory: Any, sessions: list[Any]) -> list[list[object]]:
    """Part 1: ms of the first L1 read, cold vs pre-warmed, for two builders."""
    from bench.doubles import FixedLatencyBuilder
    from memstrata.layers.executor import LocalLayerExecutor
    from workers.prewarm import Prewarmer, memory_warmer
    from workers.settings import WorkersSettings

    rows: list[list[object]] = []
    quarter = max(1, len(sessions) // 4)
    groups = [sessions[i * quarter:(i + 1) * quarter] for i in range(4)]
    for name, executor, (cold, warm) in (
            ("extractive", LocalLayerExecutor(memory.builder), groups[:2]),
            (f"FixedLatencyBuilder ({LATENCY_S * 1000:.0f} ms, test double)",
             LocalLayerExecutor(FixedLatencyBuilder(LATENCY_S)), groups[2:])):
        memory.use_layer_executor(executor)

        def read_ms(group: list[Any]) -> list[float]:
            out = []
            for s in group:
                t0 = time.perf_counter()
                memory.facts(s.scope, s.meta.session_id)
                out.append((time.perf_counter() - t0) * 1000)
            return out

        cold_ms = read_ms(cold)
        pre = Prewarmer(WorkersSettings(prewarm="recent", prewarm_sessions_per_min=100_000),
                        memory_warmer(memory))
        for r in _reports(warm):
            pre.offer_record(r)
        t0 = time.perf_counter()
        built = pre.drain()
        warm_s = time.perf_counter() - t0
        warm_ms = read_ms(warm)
        rows.append([name, len(cold), statistics.median(cold_ms), max(cold_ms),
                     statistics.median(warm_ms), max(warm_ms), f"{built} in {warm_s:.1f} s"])
    memory.use_layer_executor(LocalLayerExecutor(memory.builder))
    return rows


def _throughput(pool: Any, requests: list[Any]) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = pool.answer_many(requests)
    dt = time.perf_counter() - t0
    errors = sum(isinstance(o, BaseException) for o in out)
    return len(requests) / dt, errors


def rollouts_offline(memory: Any, data: Any, n: int) -> list[list[object]]:
    """Part 2: questions/s, rules controller, in-process vs 1 and 2 Ray actors."""
    import ray

    from memstrata.controller.config import ControllerSettings
    from memstrata.controller.run import Controller
    from memstrata.executor import LocalRolloutExecutor, RolloutRequest
    from workers.readers import serve_memory
    from workers.rollout import RayRolloutExecutor
    from workers.settings import WorkersSettings

    cs = ControllerSettings(policy="rules")
    qs = data.questions[:n]
    reqs = [RolloutRequest(q.scope, q.question, q.asked_on) for q in qs]
    local = LocalRolloutExecutor(Controller(memory, cs))
    local.answer_many(reqs)  # warm the L1/L2 caches for every configuration alike
    rows: list[list[object]] = []
    rate, err = _throughput(local, reqs)
    rows.append(["in-process (1 thread)", len(reqs), rate, err])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with serve_memory(memory, qs[0].scope.tenant_id) as reader:
            for actors in (1, 2):
                pool = RayRolloutExecutor(WorkersSettings(backend="ray", rollout_num_cpus=0.5),
                                          reader, controller_settings=cs,
                                          app_settings=memory.settings, actors=actors)
                pool.ready()
                pool.answer_many(reqs[:actors])  # warm each actor (imports, first reads)
                rate, err = _throughput(pool, reqs)
                rows.append([f"Ray, {actors} actor(s)", len(reqs), rate, err])
                pool.close()
    finally:
        ray.shutdown()
    return rows


def rollouts_slow_llm(memory: Any, data: Any, n: int) -> list[list[object]]:
    """Part 3: questions/s with a 300 ms-per-call chat double: in-process, 1 actor, 8 over
    two nodes."""
    import ray
    from ray._private.utils import get_ray_address_file
    from ray.cluster_utils import Cluster

    from bench.doubles import FixedLatencyChat
    from memstrata.controller.config import ControllerSettings
    from memstrata.controller.run import Controller
    from memstrata.executor import LocalRolloutExecutor, RolloutRequest
    from memstrata.llm.openai_compat import ChatClient
    from workers.readers import serve_memory
    from workers.rollout import RayRolloutExecutor
    from workers.settings import WorkersSettings

    cs = ControllerSettings(policy="llm")
    qs = (data.questions * 4)[:n]
    reqs = [RolloutRequest(q.scope, q.question, q.asked_on) for q in qs]
    few = reqs[: max(4, n // 8)]
    rows: list[list[object]] = []
    # The double is duck-typed to the chat client the controller calls.
    chat = cast(ChatClient, FixedLatencyChat(LATENCY_S))
    local = LocalRolloutExecutor(Controller(memory, cs, chat))
    local.answer_many(few[:1])
    rate, err = _throughput(local, few)
    rows.append(["in-process (1 thread)", "-", len(few), rate, err])
    # Cluster() records the head's address under Ray's default temp dir (not the
    # node's), which a fresh machine has only once some Ray process made it.
    Path(get_ray_address_file(None)).parent.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0,
                                                             "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=2) for _ in range(2)]
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        with serve_memory(memory, qs[0].scope.tenant_id) as reader:
            for actors, batch in ((1, few), (8, reqs)):
                pool = RayRolloutExecutor(
                    WorkersSettings(backend="ray", rollout_num_cpus=0.25, placement="spread"),
                    reader, controller_settings=cs, app_settings=memory.settings,
                    actors=actors,
                    chat_factory=lambda: cast(ChatClient, FixedLatencyChat(LATENCY_S)))
                placed = pool.ready()
                pool.answer_many(reqs[:actors])  # warm each actor (imports, first reads)
                rate, err = _throughput(pool, batch)
                rows.append([f"Ray, {actors} actor(s)", len(set(placed)), len(batch), rate,
                             err])
                pool.close()
    finally:
        ray.shutdown()
        cluster.shutdown()
    del nodes
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("LOCOMO_PATH")
    p.add_argument("--dataset", type=Path, default=Path(default) if default else None,
                   help="LoCoMo JSON (default: $LOCOMO_PATH)")
    p.add_argument("--conversations", type=int, default=2)
    p.add_argument("--questions", type=int, default=40, help="offline rollouts per config")
    p.add_argument("--parts", default="1,2,3", help="which parts to run (comma-separated)")
    p.add_argument("--llm-questions", type=int, default=64,
                   help="rollouts for 8 actors with the 300 ms chat double (an eighth for "
                        "1 actor and in-process)")
    args = p.parse_args(argv)
    if args.dataset is None or not args.dataset.is_file():
        console.print("[red]--dataset: give a LoCoMo JSON file (or set "
                      "LOCOMO_PATH)[/red]")
        return 2
    # Ray worker processes import the test doubles from bench/.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    from memstrata.config import Settings
    from memstrata.memory import Memory

    data = _dataset(args.dataset, args.conversations)
    console.print(f"{args.dataset.name}: {len(data.parsed.sessions)} sessions, "
                  f"{data.parsed.turns} turns, {len(data.questions)} questions "
                  f"({args.conversations} conversations)")
    result: dict[str, Any] = {"dataset": str(args.dataset), "args": vars(args) | {
        "dataset": str(args.dataset)}}
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        memory = Memory.open(Settings(data_dir=Path(tmp)))
        try:
            t0 = time.perf_counter()
            memory.ingest(data.parsed.sessions)
            console.print(f"ingested in {time.perf_counter() - t0:.1f} s")
            parts = {int(x) for x in args.parts.split(",")}
            console.print(f"load average before: {load_average():.1f} "
                          f"({os.cpu_count()} cores)")
            rows = first_reads(memory, data.parsed.sessions) if 1 in parts else []
            if rows:
                print_table("first read of a cold session's L1 (ms)",
                            ["builder", "sessions", "cold p50", "cold max", "pre-warmed p50",
                             "pre-warmed max", "pre-warm built"], rows)
            result["first_read_ms"] = rows
            rows = rollouts_offline(memory, data, args.questions) if 2 in parts else []
            if rows:
                print_table("rollout throughput, offline rules controller (questions/s)",
                            ["where", "questions", "q/s", "errors"], rows)
            result["rollouts_offline"] = rows
            rows = rollouts_slow_llm(memory, data, args.llm_questions) if 3 in parts else []
            base = next((r[3] for r in rows if r[0] == "Ray, 1 actor(s)"), 1.0)
            for r in rows:
                r.append(f"{float(r[3]) / float(base):.1f}x")  # type: ignore[arg-type]
            if rows:
                print_table(f"rollout throughput, LLM controller with FixedLatencyChat "
                            f"({LATENCY_S * 1000:.0f} ms/call, test double) (questions/s)",
                            ["where", "nodes", "questions", "q/s", "errors", "vs 1 actor"], rows)
            result["rollouts_llm_double"] = rows
            result["load_average_after"] = load_average()
            console.print(f"load average after: {result['load_average_after']:.1f}")
        finally:
            memory.close()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "workers.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
