"""Several Ray nodes: a rollout batch spread over two worker nodes survives losing one.

``ray.cluster_utils.Cluster`` runs a head and two worker nodes as separate
raylets on this machine (about 6 s to start). It cannot share a process with
the suite's single-node Ray, so this module shuts that one down first (it
sorts last among the worker tests).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.executor import RolloutRequest
from tests.workers.conftest import ray_env
from workers.metrics import WorkersMetrics
from workers.readers import serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    ray.shutdown()
    ray_env()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0,
                                                       "include_dashboard": False})
    nodes = [c.add_node(num_cpus=1) for _ in range(2)]
    try:
        ray.init(address=c.address, namespace="memstrata-tests", log_to_driver=False)
        c.wait_for_nodes()
        yield c, nodes
    finally:
        ray.shutdown()
        c.shutdown()


def test_batch_spread_over_two_nodes_completes_when_one_is_removed(cluster, memory, dataset):
    c, nodes = cluster
    csettings = ControllerSettings(policy="rules")
    questions = dataset.questions * 4
    local = Controller(memory, csettings)
    expected = [local.answer(q.scope, q.question, q.asked_on).answer for q in questions]
    settings = WorkersSettings(backend="ray", rollout_actors=4, rollout_num_cpus=0.25,
                               max_restarts=3, max_task_retries=3, placement="spread")
    metrics = WorkersMetrics()
    with serve_memory(memory, dataset.questions[0].scope.tenant_id) as reader:
        pool = RayRolloutExecutor(settings, reader, controller_settings=csettings,
                                  app_settings=memory.settings, metrics=metrics)
        try:
            placed = pool.ready()
            assert len(set(placed)) == 2  # spread over both worker nodes
            victim = nodes[0]
            started = threading.Event()
            seen: list[int] = []

            def progress(done: int, total: int) -> None:
                seen.append(done)
                if done >= 8:
                    started.set()

            out: list[Any] = []
            runner = threading.Thread(target=lambda: out.extend(pool.answer_many(
                [RolloutRequest(q.scope, q.question, q.asked_on) for q in questions],
                progress=progress)))
            runner.start()
            assert started.wait(180)
            c.remove_node(victim)  # its actors restart on the other node; tasks are retried
            runner.join(300)
            assert not runner.is_alive()
        finally:
            pool.close()
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors[:3]
    assert [o.answer for o in out] == expected
    assert seen == list(range(1, len(questions) + 1))  # every question answered once
    answered_on = set(pool.last_nodes)
    assert victim.node_id in answered_on and len(answered_on) == 2
    assert metrics.actor_restarts.labels(pool="rollout")._value.get() >= 1


@pytest.mark.skip(reason="a network partition needs `ip netns` with a veth pair per raylet "
                         "and root; not built in the time this issue had (node removal above "
                         "covers losing a node)")
def test_partitioned_node() -> None:
    pass
