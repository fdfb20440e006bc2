"""The Ray driver of the multi-node tests in ``test_spread_nodes``, in a process of its own.

A fresh process holds no state of the suite's earlier Ray sessions (in the test
process the GCS of the new cluster destroyed the pool's actors at creation, as
if their owner had died). It reads one JSON object from argv[1], prints
``started`` once 8 answers are in (the test then removes or cuts off a node) and
``result {...}`` at the end. After ``started`` it holds the batch until a line on
stdin says the node is gone, so the fault always lands mid-batch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import ray

from memstrata.config import Settings
from memstrata.controller.config import ControllerSettings
from memstrata.eval.datasets import load_dataset
from memstrata.executor import RolloutRequest
from workers.metrics import WorkersMetrics
from workers.readers import ServiceReaderSpec
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "locomo_mini.json"


def main(cfg: dict[str, Any]) -> None:
    ray.init(address=cfg["address"], _node_ip_address=cfg["node_ip"],
             namespace="memstrata-tests", log_to_driver=False)
    questions = load_dataset(FIXTURE, "locomo").questions * cfg["repeat"]
    reader = ServiceReaderSpec(cfg["reader"], tuple(tuple(k) for k in cfg["keys"]))
    settings = WorkersSettings(backend="ray", rollout_actors=4, rollout_num_cpus=0.25,
                               max_restarts=3, max_task_retries=3, placement="spread")
    metrics = WorkersMetrics()
    pool = RayRolloutExecutor(settings, reader,
                              controller_settings=ControllerSettings(policy="rules"),
                              app_settings=Settings(data_dir=cfg["data_dir"]),
                              metrics=metrics)
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if done == 8:
            print("started", flush=True)
            sys.stdin.readline()  # the test removes or cuts off a node, then says go

    try:
        placed = pool.ready()
        out = pool.answer_many([RolloutRequest(q.scope, q.question, q.asked_on)
                                for q in questions], progress=progress)
    finally:
        pool.close()
    print("result " + json.dumps({
        "placed": placed, "seen": seen, "nodes": pool.last_nodes,
        "answers": [o.answer if not isinstance(o, BaseException) else None for o in out],
        "errors": [repr(o) for o in out if isinstance(o, BaseException)][:3],
        "restarts": metrics.actor_restarts.labels(pool="rollout")._value.get(),
        "alive": {n["NodeID"]: n["Alive"] for n in ray.nodes()},
    }), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
