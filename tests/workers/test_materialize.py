"""Materializer actors: one build per key across callers and processes, retries, no
cached failures, busy past the queue bound, and LazyLayers writing the cache."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from memstrata.executor import ExecutorBusy
from memstrata.layers.executor import LocalLayerExecutor
from memstrata.layers.lazy import LazyLayers
from memstrata.memory import Memory
from memstrata.model import turns_digest
from memstrata.roles import LayerRequest
from tests.support.builders import FlakyBuilder
from workers.materialize import BuildFailed, RayLayerExecutor, attach, route
from workers.metrics import WorkersMetrics
from workers.settings import WorkersSettings

pytestmark = pytest.mark.integration


def _settings(**kw: Any) -> WorkersSettings:
    base = dict(backend="ray", materializers=2, build_backoff_s=0.01, build_backoff_max_s=0.05)
    return WorkersSettings(**{**base, **kw})


def _first_session(memory: Any) -> tuple[Any, str]:
    for user in sorted({s.scope.user_id for s in memory_sessions(memory)}):
        scope = next(s.scope for s in memory_sessions(memory) if s.scope.user_id == user)
        return scope, memory.sessions(scope)[0].session_id
    raise AssertionError("no sessions")


def memory_sessions(memory: Any) -> list[Any]:
    from tests.workers.conftest import FIXTURE
    from memstrata.eval.datasets import load_dataset

    return [s.meta for s in load_dataset(FIXTURE, "locomo").parsed.sessions]


def _request(memory: Any, scope: Any, sid: str, layer: str = "L1") -> LayerRequest:
    turns = memory.docs.get_turns(scope, sid)
    return LayerRequest(scope=scope, session_id=sid, layer=layer,
                        builder_version=memory.builder.version, digest=turns_digest(turns),
                        meta=memory.session(scope, sid), turns=tuple(turns))


def _flood(executor: RayLayerExecutor, request: LayerRequest, n: int) -> int:
    """``n`` concurrent builds of one key from this process; returns distinct replies."""
    with ThreadPoolExecutor(n) as pool:
        replies = list(pool.map(lambda _: executor.build_layer(request), range(n)))
    return len({repr(r) for r in replies})


def test_fifty_concurrent_requests_from_two_processes_build_once(ray_local, memory):
    scope, sid = _first_session(memory)
    request = _request(memory, scope, sid)
    settings = _settings()
    ex = RayLayerExecutor(settings, builder_factory=lambda: FlakyBuilder(delay_s=1.0),
                          name_prefix="t-flight")
    try:
        # Two other processes (Ray worker processes) each send 25 at once to the same
        # named actor; the actor holds the build for a second so they all overlap.
        @ray_local.remote(num_cpus=0)
        def caller(req: LayerRequest) -> int:
            other = RayLayerExecutor(settings, builder_factory=lambda: FlakyBuilder(),
                                     name_prefix="t-flight")
            return _flood(other, req, 25)

        distinct = ray_local.get([caller.remote(request), caller.remote(request)], timeout=120)
        assert distinct == [1, 1]
        stats = ex.stats()[route(request.key, 2)]
        assert stats["builds"] == 1 and stats["joins"] == 49 and stats["failures"] == 0
        assert sum(s["builds"] for s in ex.stats()) == 1
        items = ex.build_layer(request).items  # a late arrival joins the finished build
        assert items and all("text" in i for i in items)
        assert sum(s["builds"] for s in ex.stats()) == 1
    finally:
        ex.close()


def test_lazy_layers_single_flight_through_actor_and_cache_written(ray_local, memory):
    scope, sid = _first_session(memory)
    metrics = WorkersMetrics()
    ex = RayLayerExecutor(_settings(), builder_factory=lambda: FlakyBuilder(delay_s=0.5),
                          metrics=metrics, name_prefix="t-lazy")
    try:
        layers = LazyLayers(memory.docs, memory.builder, executor=ex)
        local = LazyLayers(memory.docs, memory.builder)
        with ThreadPoolExecutor(8) as pool:  # eight separate "processes" (own locks)
            out = list(pool.map(lambda i: LazyLayers(memory.docs, memory.builder, executor=ex)
                                .notes(scope, sid), range(8)))
        assert len({o[0].model_dump_json() for o in out}) == 1
        assert sum(s["builds"] for s in ex.stats()) == 1
        # Same key, digest and builder version as the in-process path: a plain LazyLayers
        # reads what the actor built as a cache hit, and it equals a local build.
        notes, hit = local.notes(scope, sid)
        assert hit and notes == out[0][0]
        fresh = memory.builder.turn_notes(memory.session(scope, sid),
                                          memory.docs.get_turns(scope, sid))
        assert [n.model_dump() for n in notes.notes] == [n.model_dump() for n in fresh]
        assert layers.notes(scope, sid)[1] is True
        # A second Memory over the same stores (not closed: the fixture owns them),
        # hooked through its seams as the service hooks its own.
        holder = Memory(memory.settings, memory.builder, memory.embedder, memory.vectors,
                        memory.lexical, memory.docs)
        previous = attach(holder, ex, metrics)
        assert isinstance(previous, LocalLayerExecutor)
        holder.notes(scope, sid)
        assert metrics.cache.labels(result="hit")._value.get() == 1
        assert metrics.cache_hit_ratio._value.get() == 1.0
        assert metrics.joins.labels(layer="L2")._value.get() + \
            metrics.builds.labels(layer="L2", outcome="ok")._value.get() == 8
    finally:
        ex.close()


def test_build_failing_twice_is_retried_and_cached_once(ray_local, memory):
    scope, sid = _first_session(memory)
    version = memory.builder.version
    metrics = WorkersMetrics()
    ex = RayLayerExecutor(_settings(build_retries=2), metrics=metrics, name_prefix="t-flaky",
                          builder_factory=lambda: FlakyBuilder(fail_times=2))
    try:
        assert memory.docs.get_layer(scope, sid, "L1", version) is None
        puts: list[str] = []
        real_put = memory.docs.put_layer

        def counting_put(*a: Any, **k: Any) -> Any:
            puts.append(a[2])
            return real_put(*a, **k)

        # The store it reads and writes from the start (LazyLayers keeps its writer).
        layers = LazyLayers(_Proxy(memory.docs, put_layer=counting_put), memory.builder,
                            executor=ex)
        req = _request(memory, scope, sid, "L1")
        items = ex.build_layer(req).items
        st = ex.stats()[route(req.key, 2)]
        assert st["builds"] == 1 and st["retries"] == 2 and st["failures"] == 0
        assert metrics.build_retries.labels(layer="L1")._value.get() == 2
        assert items
        facts, _ = layers.facts(scope, sid)
        assert puts.count("L1") == 1
        assert memory.docs.get_layer(scope, sid, "L1", version) is not None
        assert [f.model_dump() for f in facts.facts] == items
    finally:
        ex.close()


def test_build_that_always_fails_reports_an_error_and_caches_nothing(ray_local, memory):
    scope, sid = _first_session(memory)
    user_scope = scope.model_copy(update={"user_id": scope.user_id})
    ex = RayLayerExecutor(_settings(build_retries=1), name_prefix="t-broken",
                          builder_factory=lambda: FlakyBuilder(fail_times=-1))
    try:
        sessions = memory.sessions(user_scope)
        sid2 = sessions[-1].session_id  # a session no other test reads at L2
        layers = LazyLayers(memory.docs, memory.builder, executor=ex)
        before = memory.docs.get_layer(user_scope, sid2, "L2", memory.builder.version)
        assert before is None
        with pytest.raises(BuildFailed, match="after 2 attempt"):
            layers.notes(user_scope, sid2)
        assert memory.docs.get_layer(user_scope, sid2, "L2", memory.builder.version) is None
        st = ex.stats()
        assert sum(s["failures"] for s in st) == 1 and sum(s["builds"] for s in st) == 0
        # The failure is not remembered: the next read tries again (and fails again).
        with pytest.raises(BuildFailed):
            layers.notes(user_scope, sid2)
        assert sum(s["failures"] for s in ex.stats()) == 2
    finally:
        ex.close()


def test_queue_bound_gives_busy(ray_local, memory):
    scope, _ = _first_session(memory)
    sessions = memory.sessions(scope)
    ex = RayLayerExecutor(_settings(materializers=1, build_queue=1, build_threads=1),
                          name_prefix="t-busy",
                          builder_factory=lambda: FlakyBuilder(delay_s=1.5))
    try:
        first = threading.Thread(target=ex.build_layer,
                                 args=(_request(memory, scope, sessions[0].session_id, "L2"),))
        first.start()
        deadline = threading.Event()
        while not ex.stats()[0]["inflight"] and not deadline.wait(0.05):
            pass
        with pytest.raises(ExecutorBusy, match="MEMSTRATA_WORKERS_BUILD_QUEUE=1"):
            ex.build_layer(_request(memory, scope, sessions[1].session_id, "L2"))
        first.join(30)
    finally:
        ex.close()


def test_lost_materializer_falls_back_in_process_and_says_so(ray_local, memory, caplog):
    scope, sid = _first_session(memory)
    metrics = WorkersMetrics()
    ex = RayLayerExecutor(_settings(materializers=1, max_restarts=0), metrics=metrics,
                          name_prefix="t-lost", builder_factory=FlakyBuilder,
                          fallback=LocalLayerExecutor(memory.builder))
    req = _request(memory, scope, sid, "L2")
    ex.ray.kill(ex.actors[0], no_restart=True)
    with caplog.at_level("ERROR", logger="workers.materialize"):
        items = ex.build_layer(req)
    assert items == LocalLayerExecutor(memory.builder).build_layer(req)
    assert ex.degraded and "building in-process from now on" in caplog.text
    assert metrics.fallbacks.labels(pool="materialize")._value.get() == 1


class _Proxy:
    def __init__(self, inner: Any, **overrides: Any) -> None:
        self._inner = inner
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
