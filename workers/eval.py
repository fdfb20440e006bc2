"""``memstrata eval qa --workers N``: the run's questions answered by N Ray rollout actors.

The CLI finds this through the ``memstrata.executors`` entry point (the core
never imports :mod:`workers`). With embedded stores the run serves its own
memory over gRPC on loopback for the actors to read; with server stores each
actor opens the stores read-only itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from memstrata.config import Config, defaults
from memstrata.controller.config import ControllerSettings
from memstrata.executor import RolloutExecutor
from workers.readers import ReaderSpec, StoreReaderSpec, serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings


@contextmanager
def open_eval_rollouts(memory: Any, tenant: str, actors: int,
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
            if started and not settings.ray_address:
                ray.shutdown()
