"""``memstrata serve`` with MEMSTRATA_WORKERS_BACKEND=ray: Answer and AnswerStream run on
rollout actors (with a call's options too) and equal the in-process answers, traces
included; the workers' metrics are on /metrics."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata.client.sync import MemoryClient
from memstrata.controller.config import ControllerSettings
from memstrata.limits import TurnLimits
from query_service.keys import add_key
from query_service.server import build_server
from query_service.settings import ServiceSettings
from tests.integration.query_service.support import LoopThread

pytestmark = pytest.mark.integration

_TIMINGS = {"ms", "ms_total", "ms_llm", "ms_memory", "cpu_ms_total", "cpu_ms_memory"}


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


#: A service call's options: the actors answer with the same per-call settings.
VARIANTS: list[dict[str, Any]] = [{"max_depth": 1}, {"max_steps": 2, "without": ["reflect"]}]


def _calls(address: str, key: str, questions: list[Any]) -> dict[str, Any]:
    """Plain answers, answers with each option set, and two AnswerStreams' events."""
    out: dict[str, Any] = {}
    with MemoryClient(address, api_key=key) as client:
        out["plain"] = [_untimed(client.answer(q.scope, q.question, q.asked_on)
                                 .model_dump(mode="json")) for q in questions]
        out["options"] = [[_untimed(client.answer(q.scope, q.question, q.asked_on, **opts)
                                    .model_dump(mode="json")) for q in questions[:3]]
                          for opts in VARIANTS]
        out["streams"] = [[_untimed(e.model_dump(mode="json")) for e in
                           client.answer_stream(q.scope, q.question, q.asked_on, **opts)]
                          for q, opts in zip(questions[:2], [{}, VARIANTS[0]])]
    return out


def test_answer_through_serve_on_ray_equals_in_process(ray_local, memory, dataset, tmp_path,
                                                       monkeypatch):
    tenant = dataset.questions[0].scope.tenant_id
    keys = tmp_path / "keys.json"
    key = add_key(keys, tenant)[1]
    settings = ServiceSettings(port=0, keys_file=keys, grace_s=1)
    controller = ControllerSettings(policy="rules")
    questions = dataset.questions[:6]
    loop = LoopThread()
    try:
        plain = loop.run(build_server(memory, settings, controller_settings=controller,
                                      turn_limits=TurnLimits()))
        try:
            assert plain.workers is None and plain.servicer.rollouts is None
            expected = _calls(plain.address, key, questions)
        finally:
            loop.run(plain.stop(0))
        # The options change the answers (else the comparison below proves little).
        assert expected["options"][0] != expected["plain"][:3]
        assert all((a["summary"]["deepest_layer"] or 0) <= 1
                   for a in expected["options"][0])
        monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "ray")
        monkeypatch.setenv("MEMSTRATA_WORKERS_ROLLOUT_ACTORS", "2")
        monkeypatch.setenv("MEMSTRATA_WORKERS_ROLLOUT_NUM_CPUS", "0")
        from memstrata.config import load_config

        handle = loop.run(build_server(memory, settings, controller_settings=controller,
                                       turn_limits=TurnLimits(),
                                       config=load_config()))  # the entry point's load
        try:
            assert handle.workers is not None and handle.servicer.rollouts is not None
            got = _calls(handle.address, key, questions)
            assert got["plain"] == expected["plain"]
            assert got["options"] == expected["options"]
            # AnswerStream: the actor's trace replayed step by step, then the answer.
            assert got["streams"] == expected["streams"]
            assert got["streams"][0][-1] == expected["plain"][0]
            assert len(got["streams"][0]) - 1 == len(expected["plain"][0]["steps"]) > 0
            reg = handle.metrics.registry
            assert reg.get_sample_value("memstrata_workers_rollouts_total",
                                        {"outcome": "ok"}) == len(questions) + 3 * 2 + 2
        finally:
            loop.run(handle.stop(0))
    finally:
        loop.close()


def test_busy_workers_are_resource_exhausted_through_the_service():
    import grpc

    from memstrata.executor import ExecutorBusy
    from query_service.errors import status_for

    code, detail = status_for(ExecutorBusy("materializer busy: retry later")) or (None, "")
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "retry later" in detail


def test_workers_check_lists_the_nodes_and_leaves_the_connection(ray_local, monkeypatch):
    """``memstrata workers check`` reaches the cluster as the service would; in a process
    already connected it reports that cluster and leaves the connection open."""
    from typer.testing import CliRunner

    from memstrata.cli import _register_subcommands, app

    _register_subcommands()
    monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "ray")
    res = CliRunner().invoke(app, ["workers", "check"])
    assert res.exit_code == 0, res.output
    assert "backend=ray" in res.output and "1 node(s), 2 CPUs" in res.output
    assert ray_local.is_initialized()
