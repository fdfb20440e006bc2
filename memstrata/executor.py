"""Where controller rollouts run, and the hooks an executor backend registers.

The rollout seam: the core asks for a batch of answers through
:class:`RolloutExecutor` and never learns where the work ran. The in-process
:class:`LocalRolloutExecutor` (the default, no extra dependency) runs the
controller on the caller's thread or a local thread pool; :mod:`workers`
provides a Ray-backed one. The core never imports :mod:`workers`: a service
hands its executor in.

The other seam, where L1/L2 layers are built, is the memory's: its types
(:class:`~memstrata.roles.LayerRequest`, :class:`~memstrata.roles.LayerExecutor`)
are in :mod:`memstrata.roles` beside the hosted memory that takes one, its
in-process default in :mod:`memstrata.layers.executor`. The two meet only here,
in what every backend may raise (:class:`ExecutorBusy`,
:class:`ExecutorUnavailable`) and in the hooks a service registers in
:data:`EXECUTOR_GROUP` (:class:`ServiceWorkersHook`, :class:`EvalRolloutsHook`):
what they are handed and hand back, typed, so neither side passes ``Any``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, cast, overload, runtime_checkable

from memstrata.model import Scope

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from memstrata.config import Config
    from memstrata.contract import Answer
    from memstrata.controller.config import ControllerSettings
    from memstrata.roles import HostedMemory


class ExecutorBusy(RuntimeError):
    """The executor's queue is full; retry later (RESOURCE_EXHAUSTED through the service)."""


class ExecutorUnavailable(RuntimeError):
    """The executor's backend cannot be reached (the caller may fall back to in-process)."""


@dataclass(frozen=True)
class RolloutRequest:
    """One question to answer from one (tenant, user) scope.

    ``settings``: this request's controller settings when they differ from the
    executor's (a service call's max_steps, max_depth or ablations); None: the
    executor's own.
    """

    scope: Scope
    question: str
    asked_on: datetime | None = None
    settings: "ControllerSettings | None" = None


#: ``progress(done, total)`` after each finished rollout.
RolloutProgress = Callable[[int, int], None]


@runtime_checkable
class RolloutExecutor(Protocol):
    """Answers many questions; result ``i`` is the answer to request ``i`` or its error."""

    def answer_many(self, requests: Sequence[RolloutRequest], *,
                    progress: RolloutProgress | None = None,
                    ) -> list["Answer | BaseException"]:
        ...


class Answerer(Protocol):
    """What answers one question (:class:`~memstrata.controller.run.Controller`)."""

    def with_settings(self, settings: "ControllerSettings | None") -> "Answerer":
        """This answerer, or one like it with a request's own controller settings."""
        ...

    def answer(self, scope: Scope, question: str,
               asked_on: datetime | None = None) -> "Answer":
        ...


class LocalRolloutExecutor:
    """Runs ``controller.answer`` on local threads (one by default: the old sequential path)."""

    def __init__(self, controller: Answerer, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads: must be at least 1, got {threads}")
        self.controller = controller
        self.threads = threads

    def _one(self, r: RolloutRequest) -> "Answer | BaseException":
        try:
            return self.controller.with_settings(r.settings).answer(
                r.scope, r.question, r.asked_on)
        except Exception as exc:  # noqa: BLE001 - one failed question must not end a batch
            return exc

    def answer_many(self, requests: Sequence[RolloutRequest], *,
                    progress: RolloutProgress | None = None,
                    ) -> list["Answer | BaseException"]:
        out: list[Answer | BaseException] = []
        if self.threads == 1:
            for r in requests:
                out.append(self._one(r))
                if progress:
                    progress(len(out), len(requests))
            return out
        with ThreadPoolExecutor(self.threads, thread_name_prefix="memstrata-rollout") as pool:
            for i, res in enumerate(pool.map(self._one, requests), start=1):
                out.append(res)
                if progress:
                    progress(i, len(requests))
        return out


#: Entry-point group of executor backends (``workers`` registers ``eval_rollouts``).
EXECUTOR_GROUP = "memstrata.executors"


class OneAnswer(Protocol):
    """Answers one service call on a worker pool (``workers.rollout.RayRolloutExecutor``)."""

    def answer_one(self, request: RolloutRequest) -> "Answer":
        ...


class RolloutHost(Protocol):
    """What the ``service_workers`` hook may set on the query service's servicer."""

    #: The service's controller settings (the actors answer with them).
    controller_settings: "ControllerSettings"
    #: The pool Answer and AnswerStream go to; None: answered in-process.
    rollouts: OneAnswer | None
    #: The tenants the pool's actors can read.
    rollout_tenants: set[str]


class Closable(Protocol):
    """What a hook started; the service closes it when it stops."""

    def close(self) -> None:
        ...


class ServiceWorkersHook(Protocol):
    """``service_workers``: called once the query service listens (``workers.service``)."""

    def __call__(self, memory: "HostedMemory", servicer: RolloutHost, tenants: set[str],
                 registry: "CollectorRegistry | None" = None,
                 config: "Config | None" = None) -> Closable | None:
        ...


class EvalRolloutsHook(Protocol):
    """``eval_rollouts``: a rollout pool over ``memory`` for ``eval qa --workers``."""

    def __call__(self, memory: "HostedMemory", tenant: str, actors: int,
                 controller_settings: "ControllerSettings",
                 config: "Config | None" = None) -> AbstractContextManager[RolloutExecutor]:
        ...


@overload
def find_backend(name: Literal["service_workers"]) -> ServiceWorkersHook: ...
@overload
def find_backend(name: Literal["eval_rollouts"]) -> EvalRolloutsHook: ...


def find_backend(name: str) -> ServiceWorkersHook | EvalRolloutsHook:
    """The hook a service registered as ``name`` in :data:`EXECUTOR_GROUP`.

    Raises :class:`LookupError` saying what to install when none is.
    """
    from importlib.metadata import entry_points

    for ep in entry_points(group=EXECUTOR_GROUP):
        if ep.name == name:
            # The entry point names one of the hooks below: workers checks its own
            # against these protocols (a typed assignment mypy verifies).
            return cast("ServiceWorkersHook | EvalRolloutsHook", ep.load())
    raise LookupError(f"no executor backend {name!r} is installed: install the Ray workers "
                      f"with pip install 'memstrata[ray]'")
