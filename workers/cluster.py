"""Joining (or starting) the Ray cluster the workers run on."""

from __future__ import annotations

import logging
from typing import Any

from memstrata.executor import ExecutorUnavailable
from workers.settings import WorkersSettings

log = logging.getLogger(__name__)


class RayUnreachable(ExecutorUnavailable):
    """``ray.init`` could not reach the configured address."""


def connect(settings: WorkersSettings, **init_kwargs: Any) -> Any:
    """``ray.init`` per the settings, unless this process is already connected.

    An empty address starts a local Ray with ``local_num_cpus`` CPUs and no
    dashboard; ``auto`` or an explicit address joins that cluster and fails
    with :class:`RayUnreachable` naming the address when nobody answers.
    """
    import ray

    if ray.is_initialized():
        return ray
    address = settings.ray_address or None
    kwargs: dict[str, Any] = {"namespace": settings.namespace, "log_to_driver": False,
                              "logging_level": logging.WARNING, **init_kwargs}
    if address is None:
        kwargs.setdefault("num_cpus", settings.local_num_cpus)
        kwargs.setdefault("include_dashboard", False)
    if address is not None and address != "auto":
        probe(address, settings.connect_timeout_s)
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        raise RayUnreachable(
            f"cannot reach the Ray cluster at {settings.ray_address or 'a new local Ray'} "
            f"(MEMSTRATA_WORKERS_RAY_ADDRESS): {exc}") from None
    log.info("connected to Ray at %s", address or "a new local Ray")
    return ray


def probe(address: str, timeout_s: float) -> None:
    """Fail fast when nothing listens at ``address`` (Ray itself retries for a minute)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnreachable(
            f"cannot reach the Ray cluster at {address} (MEMSTRATA_WORKERS_RAY_ADDRESS): "
            f"{exc}") from None


def is_ray_lost(exc: BaseException) -> bool:
    """True when ``exc`` says the cluster (not the work) is gone."""
    try:
        from ray import exceptions as rx
    except ImportError:  # pragma: no cover - the ray extra is installed with workers
        return False
    lost = tuple(c for c in (getattr(rx, "RaySystemError", None),
                             getattr(rx, "ActorUnavailableError", None),
                             getattr(rx, "RayActorError", None)) if c is not None)
    return isinstance(exc, lost + (ConnectionError,))
