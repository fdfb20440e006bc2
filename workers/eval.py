"""``memstrata eval qa --workers N``: the run's questions answered by N Ray rollout actors.

The CLI finds this through the ``memstrata.executors`` entry point (the core
never imports :mod:`workers`). With embedded stores the run serves its own
memory over gRPC on loopback for the actors to read; with server stores each
actor opens the stores read-only itself. The run's L1/L2 builds go to
materializer actors of its own (``MEMSTRATA_WORKERS_MATERIALIZERS``) with the
memory's builder settings; this process writes the cache as ever.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from memstrata.config import Config, defaults
from memstrata.controller.config import ControllerSettings
from memstrata.executor import EvalRolloutsHook, RolloutExecutor
from memstrata.layers.executor import LocalLayerExecutor
from memstrata.llm.factory import open_builder
from memstrata.roles import HostedMemory
from workers.materialize import RayLayerExecutor, attach
from workers.readers import ReaderSpec, StoreReaderSpec, serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings


@contextmanager
def open_eval_rollouts(memory: HostedMemory, tenant: str, actors: int,
                       controller_settings: ControllerSettings,
                       config: Config | None = None) -> Iterator[RolloutExecutor]:
    """A Ray rollout pool of ``actors`` over ``memory``, torn down on exit.

    ``config`` is the command's loaded configuration (``MEMSTRATA_WORKERS_*``);
    without it the defaults apply. The backend is Ray either way.
    """
    import ray

    from memstrata.store.factory import embedded_backends

    loaded = config.get(WorkersSettings) if config else defaults(WorkersSettings)
    settings = loaded.model_copy(update={"backend": "ray"})
    started = not ray.is_initialized()
    with ExitStack() as stack:
        if started and not settings.ray_address:
            stack.callback(ray.shutdown)  # last: after the actors are gone
        # Named for this run only: a shared cluster's materializers may run another builder.
        layers = RayLayerExecutor(settings, detached=False,
                                  builder_factory=functools.partial(open_builder,
                                                                    memory.settings),
                                  fallback=LocalLayerExecutor(memory.builder),
                                  name_prefix=f"memstrata-eval-{uuid.uuid4().hex[:10]}")
        stack.callback(layers.close)
        previous = attach(memory, layers)
        stack.callback(memory.use_layer_executor, previous)
        reader: ReaderSpec
        if embedded_backends(memory.settings):
            reader = stack.enter_context(serve_memory(memory, tenant))
        else:
            reader = StoreReaderSpec(memory.settings)
        pool = RayRolloutExecutor(settings, reader, controller_settings=controller_settings,
                                  app_settings=memory.settings, actors=actors)
        try:
            pool.ready()
            yield pool
        finally:
            pool.close()


#: The entry point's hook, checked by mypy against the protocol ``eval qa`` calls it by.
_HOOK: EvalRolloutsHook = open_eval_rollouts
