"""Rollout actors: answers identical to the in-process controller, through ``eval qa
--workers 2`` (its L1/L2 built by materializer actors) and through the pool directly,
even when an actor is killed mid-batch, and over server stores."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.executor import RolloutRequest
from tests.workers.conftest import FIXTURE
from workers.metrics import WorkersMetrics
from workers.readers import serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings

pytestmark = pytest.mark.integration

#: Timings, and whether an L1/L2 read was a cache hit (it depends on which run read first).
_TIMINGS = {"ms", "ms_total", "ms_llm", "ms_memory", "cpu_ms_total", "cpu_ms_memory",
            "latency_ms", "overhead_ms", "overhead_cpu_ms", "ingest_seconds", "answer_seconds",
            "cached"}


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


@pytest.fixture(scope="module")
def cli() -> Any:

    from memstrata.cli import _register_subcommands, app

    _register_subcommands()
    return app


def _eval(cli: Any, tmp: Path, *extra: str) -> dict[str, Any]:
    out = tmp / f"qa{len(extra)}.json"
    res = CliRunner().invoke(cli, ["eval", "qa", "-d", str(FIXTURE), "-f", "locomo", "-o",
                                   str(out), "--data-dir", str(tmp / f"d{len(extra)}"),
                                   "--policy", "rules", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_eval_qa_with_two_workers_matches_in_process(ray_local, cli, tmp_path: Path,
                                                     monkeypatch):
    import workers.eval
    from workers.materialize import RayLayerExecutor

    built: list[str] = []

    class Recording(RayLayerExecutor):  # the real executor; it notes what it was sent
        def build_layer(self, request: Any) -> Any:
            out = super().build_layer(request)
            built.append(request.layer)
            return out

    local = _eval(cli, tmp_path)
    monkeypatch.setattr(workers.eval, "RayLayerExecutor", Recording)
    monkeypatch.setenv("MEMSTRATA_WORKERS_MATERIALIZERS", "1")
    remote = _eval(cli, tmp_path, "--workers", "2")
    assert {"L1", "L2"} & set(built)  # the run's layer builds went to the materializers
    assert remote["config"]["workers"] == 2
    mine, theirs = local["results"], remote["results"]
    assert len(mine) == len(theirs) == 16
    for a, b in zip(mine, theirs):
        assert (b["qid"], b["prediction"], b["sources"], b["source_sessions"]) == \
            (a["qid"], a["prediction"], a["sources"], a["source_sessions"])
        assert _untimed(b["summary"]) == _untimed(a["summary"])  # depth, drills, steps
        assert b["error"] is None
    assert _untimed(remote["report"]) == _untimed(local["report"])
    assert sum(1 for r in mine if not r["abstained"]) >= 8  # not vacuous


def test_killing_a_rollout_actor_mid_batch_still_completes(ray_local, memory, dataset):
    csettings = ControllerSettings(policy="rules")
    local = Controller(memory, csettings)
    questions = dataset.questions
    expected = [local.answer(q.scope, q.question, q.asked_on).answer for q in questions]
    metrics = WorkersMetrics()
    settings = WorkersSettings(backend="ray", rollout_actors=2, max_restarts=2,
                               max_task_retries=3, rollout_num_cpus=0)
    with serve_memory(memory, dataset.questions[0].scope.tenant_id) as reader:
        pool = RayRolloutExecutor(settings, reader, controller_settings=csettings,
                                  app_settings=memory.settings, metrics=metrics)
        try:
            pool.ready()
            seen: list[int] = []
            started, killed = threading.Event(), threading.Event()

            def progress(done: int, total: int) -> None:
                seen.append(done)
                if done == 3:  # hold the batch until the kill: it lands mid-batch
                    started.set()
                    killed.wait(60)

            out: list[Any] = []
            runner = threading.Thread(target=lambda: out.extend(pool.answer_many(
                [RolloutRequest(q.scope, q.question, q.asked_on) for q in questions],
                progress=progress)), daemon=True)  # a failed test must not hang exit
            runner.start()
            assert started.wait(120)
            try:
                ray_local.kill(pool.actors[0], no_restart=False)  # Ray restarts it
            finally:
                killed.set()
            runner.join(240)
            assert not runner.is_alive()
        finally:
            pool.close()
    assert len(out) == len(questions)
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors[:3]
    assert [o.answer for o in out] == expected
    assert seen == list(range(1, len(questions) + 1))  # each question answered once
    assert metrics.actor_restarts.labels(pool="rollout")._value.get() >= 1  # it did restart


def test_dead_actors_are_skipped_and_all_dead_is_a_clear_error(ray_local, memory, dataset):
    from memstrata.executor import ExecutorUnavailable

    csettings = ControllerSettings(policy="rules")
    settings = WorkersSettings(backend="ray", rollout_actors=2, max_restarts=0,
                               max_task_retries=0, rollout_num_cpus=0)
    reqs = [RolloutRequest(q.scope, q.question, q.asked_on) for q in dataset.questions[:4]]
    with serve_memory(memory, dataset.questions[0].scope.tenant_id) as reader:
        pool = RayRolloutExecutor(settings, reader, controller_settings=csettings,
                                  app_settings=memory.settings)
        try:
            pool.ready()
            ray_local.kill(pool.actors[0], no_restart=True)
            out = pool.answer_many(reqs)
            assert all(not isinstance(o, BaseException) for o in out), out
            assert pool.dead <= {0}
            ray_local.kill(pool.actors[1], no_restart=True)
            out = pool.answer_many(reqs)
            assert all(isinstance(o, ExecutorUnavailable) for o in out)
            assert pool.dead == {0, 1}
            with pytest.raises(ExecutorUnavailable, match="MAX_RESTARTS"):
                pool.answer_one(reqs[0])
        finally:
            pool.close()


def test_actors_read_server_stores_through_their_own_read_only_memory(
        ray_local, dataset, tmp_path: Path, osmem_url: str):
    """``StoreReaderSpec``: the actor opens ``Memory.open(read_only=True)`` itself; docs
    and BM25 live in osmem-server (OpenSearch-compatible) and the answers, depth, sources
    and traces equal the in-process ones. No Qdrant server runs here, so the vectors are
    Qdrant Edge in a data dir the writer has closed, read by one actor (Qdrant Edge's
    files admit one process at a time)."""
    from memstrata.config import Settings
    from memstrata.memory import Memory
    from workers.readers import StoreReaderSpec

    s = Settings(data_dir=tmp_path / "data", lexical_backend="opensearch",
                 doc_backend="opensearch", opensearch_url=osmem_url,
                 opensearch_index_prefix="rollout")
    csettings = ControllerSettings(policy="rules")
    questions = dataset.questions[:6]
    with Memory.open(s) as m:
        m.ingest(dataset.parsed.sessions)
        local = Controller(m, csettings)
        expected = [_untimed(local.answer(q.scope, q.question, q.asked_on)
                             .model_dump(mode="json")) for q in questions]
    pool = RayRolloutExecutor(WorkersSettings(backend="ray", rollout_actors=1,
                                              rollout_num_cpus=0),
                              StoreReaderSpec(s), controller_settings=csettings,
                              app_settings=s)
    try:
        pool.ready()
        out = pool.answer_many([RolloutRequest(q.scope, q.question, q.asked_on)
                                for q in questions])
    finally:
        pool.close()
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors[:3]
    assert [_untimed(o.model_dump(mode="json")) for o in out] == expected
    assert sum(1 for a in expected if a["sources"]) >= 3  # not vacuous
