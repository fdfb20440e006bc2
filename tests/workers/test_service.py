"""``memstrata serve`` with MEMSTRATA_WORKERS_BACKEND=ray: Answer and AnswerStream run on
rollout actors and equal the in-process answers; the workers' metrics are on /metrics."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata.client.sync import MemoryClient
from memstrata.controller.config import ControllerSettings
from memstrata.controller.result import Answer
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


def _answers(address: str, key: str, questions: list[Any]) -> list[Any]:
    with MemoryClient(address, api_key=key) as client:
        return [_untimed(client.answer(q.scope, q.question, q.asked_on).model_dump(mode="json"))
                for q in questions]


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
        plain = loop.run(build_server(memory, settings, controller_settings=controller))
        try:
            assert plain.workers is None and plain.servicer.rollouts is None
            expected = _answers(plain.address, key, questions)
        finally:
            loop.run(plain.stop(0))
        monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "ray")
        monkeypatch.setenv("MEMSTRATA_WORKERS_ROLLOUT_ACTORS", "2")
        monkeypatch.setenv("MEMSTRATA_WORKERS_ROLLOUT_NUM_CPUS", "0")
        from memstrata.config import load_config

        handle = loop.run(build_server(memory, settings, controller_settings=controller,
                                       config=load_config()))  # the entry point's load
        try:
            assert handle.workers is not None and handle.servicer.rollouts is not None
            assert _answers(handle.address, key, questions) == expected
            with MemoryClient(handle.address, api_key=key) as client:
                q = questions[0]
                events = list(client.answer_stream(q.scope, q.question, q.asked_on))
            final = events[-1]
            assert isinstance(final, Answer) and _untimed(final.model_dump(mode="json")) == \
                expected[0]
            assert len(events) - 1 == len(final.steps)  # the actor's trace, replayed
            reg = handle.metrics.registry
            assert reg.get_sample_value("memstrata_workers_rollouts_total",
                                        {"outcome": "ok"}) == len(questions) + 1
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
