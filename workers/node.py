"""Running a Ray node for the workers, and checking the workers' settings.

Shared by ``memstrata workers`` and ``python -m workers``. A node is ``ray
start --block`` with this environment's Python, so the node's worker processes
import the same memstrata and workers (every node installs the ``ray`` extra
of the same version). ``check`` connects as the service would and says what it
found.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import NoReturn

from memstrata.config import ConfigError
from workers.settings import WorkersSettings


def ray_binary() -> str:
    """The ``ray`` launcher beside this Python (the same environment), else on PATH."""
    found = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if found is None:
        raise ConfigError("no `ray` launcher beside this Python or on PATH: install the "
                          "workers with pip install 'memstrata[ray]'")
    return found


def _common(num_cpus: int | None, node_ip: str | None, extra: Sequence[str]) -> list[str]:
    if num_cpus is not None and num_cpus < 0:
        raise ConfigError(f"--num-cpus: must be 0 or more, got {num_cpus}")
    args = ["--block", "--disable-usage-stats"]
    if num_cpus is not None:
        args.append(f"--num-cpus={num_cpus}")
    if node_ip:
        args.append(f"--node-ip-address={node_ip}")
    return [*args, *extra]


def node_command(address: str | None, *, num_cpus: int | None = None,
                 node_ip: str | None = None, extra: Sequence[str] = ()) -> list[str]:
    """``ray start`` for a worker node joining the head's GCS at ``address``.

    Raises :class:`ConfigError` for a missing address, a Ray client address
    (``ray://``: a node joins through the GCS), ``auto``, or a malformed one.
    """
    if not address or address.startswith("ray://") or address == "auto":
        raise ConfigError("--address: give the head's GCS address HOST:PORT (a node joins "
                          "through the GCS, not the Ray client port)")
    return [ray_binary(), "start", f"--address={address}", *_common(num_cpus, node_ip, extra)]


def head_command(port: int, *, num_cpus: int | None = None, node_ip: str | None = None,
                 client_port: int = 10001, dashboard: bool = False,
                 extra: Sequence[str] = ()) -> list[str]:
    """``ray start --head`` listening for nodes on ``port`` and Ray clients on ``client_port``."""
    for name, value in (("--port", port), ("--client-port", client_port)):
        if not 0 < value <= 65535:
            raise ConfigError(f"{name}: {value} is out of range 1-65535")
    return [ray_binary(), "start", "--head", f"--port={port}",
            f"--ray-client-server-port={client_port}",
            f"--include-dashboard={'true' if dashboard else 'false'}",
            *_common(num_cpus, node_ip, extra)]


def node_env(settings: WorkersSettings) -> dict[str, str]:
    """What ``ray start`` needs beyond this environment: the cluster's token, if set.

    With a token, the head requires it of every node, driver and Ray client, and
    a node presents it; the node's worker processes inherit it.
    """
    from workers.cluster import ray_auth_env

    return ray_auth_env(settings.auth_token())


def shown_env(env: dict[str, str]) -> str:
    """``env`` for ``--dry-run``, the token itself left out."""
    return " ".join(f"{k}={'<hidden>' if k == 'RAY_AUTH_TOKEN' else v}"
                    for k, v in sorted(env.items()))


def run(cmd: Sequence[str], env: dict[str, str] | None = None) -> NoReturn:
    """Replace this process with ``cmd`` (the node's lifetime is the command's)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], list(cmd), {**os.environ, **(env or {})})


def check(settings: WorkersSettings) -> str:
    """Validate ``MEMSTRATA_WORKERS_*`` and reach the cluster; one line saying what is there.

    With the ``local`` backend no Ray starts: an address, if set, is probed
    (reachable, token accepted, same versions) and reported as unused. Raises
    :class:`ConfigError` for a bad setting and
    :class:`~workers.cluster.RayUnreachable` (or its auth and version kinds)
    naming the cause.
    """
    from workers.cluster import connect, probe

    if settings.backend == "local":
        if not settings.ray_address or settings.ray_address == "auto":
            return ("backend=local: builds and rollouts run in the service's process; no Ray "
                    "is used (MEMSTRATA_WORKERS_BACKEND=ray to use one)")
        meta = probe(settings.ray_address, settings.connect_timeout_s, settings.auth_token())
        version = f" (Ray {meta['ray_version']})" if meta.get("ray_version") else ""
        return (f"backend=local: the Ray cluster at {settings.ray_address} answers{version}, "
                "but the service will not use it until MEMSTRATA_WORKERS_BACKEND=ray")
    import ray

    mine = not ray.is_initialized()
    connect(settings)
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        cpus = ray.cluster_resources().get("CPU", 0)
    finally:
        if mine:  # leave a connection this process already had alone
            ray.shutdown()
    return (f"backend={settings.backend} address={settings.ray_address or '(a local Ray)'}: "
            f"{len(nodes)} node(s), {cpus:g} CPUs")
