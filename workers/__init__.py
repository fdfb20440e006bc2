"""Ray workers: L1/L2 builds and controller rollouts spread over a Ray cluster.

The core defines the two seams (layer builds:
:class:`memstrata.roles.LayerExecutor`; rollouts: :mod:`memstrata.executor`) and
never imports this package; the query service and ``memstrata eval qa --workers
N`` find it through the ``memstrata.executors`` entry point, and its settings
(``MEMSTRATA_WORKERS_*``) through ``memstrata.settings``. Modules:
:mod:`workers.settings` (no Ray import), :mod:`workers.materialize` (named build
actors, single flight per key),
:mod:`workers.rollout` (the rollout pool), :mod:`workers.readers` (how actors read
memory), :mod:`workers.prewarm` (L1 ahead of the first read), :mod:`workers.service`
(hooking all of it into ``memstrata serve``), :mod:`workers.metrics`.
"""
