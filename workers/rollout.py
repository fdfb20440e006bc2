"""Controller rollouts on Ray: a pool of actors that each run ``Controller.answer``.

Each actor opens its own reader (:mod:`workers.readers`) and controller once,
then answers whatever it is sent. The pool keeps every actor busy with at most
``rollout_concurrency`` questions each, and collects result ``i`` for request
``i`` exactly once: a task whose actor died is retried by Ray on the restarted
actor (``max_task_retries``), and one whose actor is gone for good is resent
to another actor, a bounded number of times. Nothing waits past its deadline.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memstrata.config import Settings, defaults
from memstrata.controller.config import ControllerSettings
from memstrata.contract import Answer
from memstrata.executor import (
    ExecutorBusy,
    ExecutorUnavailable,
    RolloutExecutor,
    RolloutProgress,
    RolloutRequest,
)
from workers.cluster import connect, is_ray_lost
from workers.metrics import WorkersMetrics
from workers.readers import ReaderSpec
from workers.settings import WorkersSettings
from workers.tracing import actor_tracing, carrier, restored

if TYPE_CHECKING:
    from memstrata.controller.run import Controller
    from memstrata.llm.openai_compat import ChatClient

log = logging.getLogger(__name__)

#: Makes the controller's chat client inside the actor (None: as the settings say).
ChatFactory = Callable[[], "ChatClient | None"]


class RolloutWorker:
    """One rollout actor (wrapped with ``ray.remote`` by :func:`rollout_class`)."""

    def __init__(self, reader: ReaderSpec, controller_settings: ControllerSettings,
                 app_settings: Settings | None, chat_factory: ChatFactory | None) -> None:
        from memstrata.controller.run import Controller

        actor_tracing()  # the node's OTEL_* environment: spans join the callers' traces
        self.reader = reader.open()
        if chat_factory is not None:
            self.controller = Controller(self.reader, controller_settings, chat_factory(),
                                         max_query_chars=(app_settings or defaults(Settings))
                                         .max_query_chars)
        else:
            self.controller = Controller.open(self.reader, controller_settings,
                                              app_settings=app_settings or defaults(Settings))
        self.incarnation = uuid.uuid4().hex
        self.answered = 0
        #: Controllers for requests with settings of their own (a service call's options).
        self.variants: dict[str, Controller] = {}

    def _controller(self, request: RolloutRequest) -> Controller:
        if request.settings is None:
            return self.controller
        key = request.settings.model_dump_json()
        found = self.variants.get(key)
        if found is None:
            if len(self.variants) >= 32:  # a few option sets recur; keep memory bounded
                self.variants.clear()
            found = self.variants[key] = self.controller.with_settings(request.settings)
        return found

    def answer(self, request: RolloutRequest, trace: dict[str, str] | None = None,
               ) -> tuple[Answer, str, str]:
        """The answer, this actor's incarnation and the node it ran on; ``trace``: the
        caller's trace context (:func:`workers.tracing.carrier`)."""
        import ray

        with restored(trace):
            a = self._controller(request).answer(request.scope, request.question,
                                                 request.asked_on)
        self.answered += 1
        return a, self.incarnation, ray.get_runtime_context().get_node_id()

    def where(self) -> tuple[str, str]:
        import ray

        return self.incarnation, ray.get_runtime_context().get_node_id()


@functools.lru_cache(maxsize=1)
def rollout_class() -> Any:
    import ray

    return ray.remote(RolloutWorker)


class RayRolloutExecutor(RolloutExecutor):
    """A pool of rollout actors; ``answer_many`` for batches, ``answer_one`` for a service."""

    def __init__(self, settings: WorkersSettings, reader: ReaderSpec, *,
                 controller_settings: ControllerSettings | None = None,
                 app_settings: Settings | None = None,
                 chat_factory: ChatFactory | None = None,
                 metrics: WorkersMetrics | None = None,
                 actors: int | None = None) -> None:
        self.ray = connect(settings)
        self.settings = settings
        self.metrics = metrics or WorkersMetrics()
        n = actors or settings.rollout_actors
        cls = rollout_class()
        strategy = "SPREAD" if settings.placement == "spread" else "DEFAULT"
        csettings = controller_settings or defaults(ControllerSettings)
        self.actors = [
            cls.options(max_restarts=settings.max_restarts,
                        max_task_retries=settings.max_task_retries,
                        max_concurrency=settings.rollout_concurrency,
                        num_cpus=settings.rollout_num_cpus, scheduling_strategy=strategy)
            .remote(reader, csettings, app_settings, chat_factory)
            for _ in range(n)]
        self._incarnations: dict[int, str] = {}
        self._inflight = 0
        self._lock = threading.Lock()
        self._next = 0
        #: Actors Ray gave up on (restarts exhausted); the pool stops sending them work.
        self.dead: set[int] = set()
        #: Node id of every answered request of the last batch (for reports and tests).
        self.last_nodes: list[str] = []

    @property
    def slots(self) -> int:
        return len(self.actors) * self.settings.rollout_concurrency

    def ready(self, timeout_s: float = 120.0) -> list[str]:
        """Wait until every actor is up; returns their node ids."""
        return [n for _, n in self.ray.get([a.where.remote() for a in self.actors],
                                           timeout=timeout_s)]

    def _seen(self, i: int, incarnation: str) -> None:
        old = self._incarnations.get(i)
        if old is not None and old != incarnation:
            self.metrics.actor_restarts.labels(pool="rollout").inc()
        self._incarnations[i] = incarnation

    def answer_many(self, requests: Sequence[RolloutRequest], *,
                    progress: RolloutProgress | None = None,
                    ) -> list[Answer | BaseException]:
        from ray import exceptions as rx

        n = len(requests)
        results: list[Answer | BaseException | None] = [None] * n
        nodes: list[str] = [""] * n
        tries = [0] * n
        todo = list(range(n))
        todo.reverse()
        running: dict[Any, tuple[int, int, float]] = {}  # ref -> (request, actor, deadline)
        load = [0] * len(self.actors)
        done = 0
        trace = carrier()  # the caller's trace: the actors' spans join it
        timeout = self.settings.rollout_timeout_s
        limit = self.settings.rollout_concurrency
        while todo or running:
            alive = [a for a in range(len(load)) if a not in self.dead]
            if not alive and not running:  # every actor is gone for good
                for j in todo:
                    results[j] = ExecutorUnavailable("every rollout actor is dead (restarts "
                                                     "exhausted: MEMSTRATA_WORKERS_MAX_RESTARTS)")
                    self.metrics.rollouts.labels(outcome="failed").inc()
                break
            while todo and alive and min(load[a] for a in alive) < limit:
                j = todo.pop()
                k = min(alive, key=lambda a: (load[a], (a - self._next) % len(load)))
                self._next = (k + 1) % len(load)
                load[k] += 1
                tries[j] += 1
                running[self.actors[k].answer.remote(requests[j], trace)] = \
                    (j, k, time.monotonic() + timeout)
            self.metrics.queue_depth.labels(pool="rollout").set(len(todo) + len(running))
            ready, _ = self.ray.wait(list(running), num_returns=1, timeout=1.0)
            now = time.monotonic()
            for ref in list(running):
                j, k, deadline = running[ref]
                if ref not in ready and now < deadline:
                    continue
                del running[ref]
                load[k] -= 1
                outcome: Answer | BaseException
                if ref not in ready:
                    try:
                        self.ray.cancel(ref, force=False)
                    except Exception as exc:  # noqa: BLE001 - already finished or its actor is gone
                        log.debug("cancelling rollout %d: %s", j, exc)
                    outcome = TimeoutError(f"rollout {j} took over {timeout:g} s "
                                           f"(MEMSTRATA_WORKERS_ROLLOUT_TIMEOUT_S)")
                    self.metrics.rollouts.labels(outcome="timeout").inc()
                else:
                    try:
                        answer, incarnation, node = self.ray.get(ref)
                    except rx.RayTaskError as exc:
                        outcome = getattr(exc, "cause", None) or exc
                        self.metrics.rollouts.labels(outcome="failed").inc()
                    except Exception as exc:  # noqa: BLE001 - the actor is gone for good: resend elsewhere
                        if isinstance(exc, rx.RayActorError) and \
                                not isinstance(exc, getattr(rx, "ActorUnavailableError", ())):
                            self.dead.add(k)
                        # Resending is bounded: to another live actor after a death (at
                        # most once per actor), else by MAX_TASK_RETRIES.
                        if (k in self.dead and tries[j] <= len(self.actors)) or \
                                (tries[j] <= self.settings.max_task_retries
                                 and is_ray_lost(exc)):
                            log.warning("rollout %d lost its actor (%s); resending", j, exc)
                            todo.append(j)
                            continue
                        outcome = ExecutorUnavailable(f"rollout {j} failed: {exc}")
                        self.metrics.rollouts.labels(outcome="failed").inc()
                    else:
                        self._seen(k, incarnation)
                        outcome, nodes[j] = answer, node
                        self.metrics.rollouts.labels(outcome="ok").inc()
                results[j] = outcome
                done += 1
                if progress:
                    progress(done, n)
        self.metrics.queue_depth.labels(pool="rollout").set(0)
        self.last_nodes = nodes
        return [r if r is not None else RuntimeError("lost") for r in results]

    def answer_one(self, request: RolloutRequest) -> Answer:
        """One answer for a service call; "busy" past the queue bound, errors re-raised."""
        with self._lock:
            if self._inflight >= self.slots + self.settings.rollout_queue:
                self.metrics.rollouts.labels(outcome="busy").inc()
                raise ExecutorBusy(
                    f"rollout pool busy: {self._inflight} answers queued or running "
                    f"(MEMSTRATA_WORKERS_ROLLOUT_QUEUE={self.settings.rollout_queue}); "
                    f"retry later")
            self._inflight += 1
        try:
            out = self.answer_many([request])[0]
        except Exception as exc:  # per-question errors come back as results: this is Ray
            self.metrics.fallbacks.labels(pool="rollout").inc()
            raise ExecutorUnavailable(f"the Ray rollout pool failed: {exc}") from exc
        finally:
            with self._lock:
                self._inflight -= 1
        if isinstance(out, BaseException):
            raise out
        return out

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a, no_restart=True)
