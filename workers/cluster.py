"""Joining (or starting) the Ray cluster the workers run on."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from memstrata.executor import ExecutorUnavailable
from workers.settings import WorkersSettings

log = logging.getLogger(__name__)


class RayUnreachable(ExecutorUnavailable):
    """``ray.init`` could not reach the configured address."""


class RayAuthRefused(RayUnreachable):
    """The cluster answered but refused this process's token (or its lack of one)."""


class RayVersionMismatch(RayUnreachable):
    """The cluster runs another Ray or Python version than this process."""


#: Where the head keeps what it was started with (Ray's own GCS key-value entry).
_META_NAMESPACE, _META_KEY = b"cluster", b"CLUSTER_METADATA"
_ADDRESS_VAR = "MEMSTRATA_WORKERS_RAY_ADDRESS"
_TOKEN_VARS = "MEMSTRATA_WORKERS_RAY_AUTH_TOKEN or MEMSTRATA_WORKERS_RAY_AUTH_TOKEN_FILE"


def use_token(settings: WorkersSettings) -> bool:
    """Make this process present the configured token to Ray; False when none is set.

    Ray reads its token mode and token from the environment (``RAY_AUTH_MODE``,
    ``RAY_AUTH_TOKEN``) and caches both: set them and refresh its caches, before
    ``ray.init``. Worker processes a local Ray starts inherit them.
    """
    token = settings.auth_token()
    if not token:
        return False
    os.environ.update(ray_auth_env(token))
    import ray._raylet as raylet

    config = getattr(raylet, "Config", None)
    loader = getattr(raylet, "AuthenticationTokenLoader", None)
    if config is not None and loader is not None:  # a Ray without token auth has neither
        config.initialize("")
        loader.instance().reset_cache()
    return True


def ray_auth_env(token: str) -> dict[str, str]:
    """The environment that makes Ray (head, node, driver) use ``token``."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token} if token else {}


def connect(settings: WorkersSettings, **init_kwargs: Any) -> Any:
    """``ray.init`` per the settings, unless this process is already connected.

    An empty address starts a local Ray with ``local_num_cpus`` CPUs and no
    dashboard; ``auto`` or an explicit address joins that cluster. An explicit
    address is probed first (:func:`probe`), so a refused token, another Ray
    version or nobody listening fails in well under a second, naming the cause,
    instead of after Ray's own twenty retries.
    """
    import ray

    if ray.is_initialized():
        return ray
    use_token(settings)
    address = settings.ray_address or None
    kwargs: dict[str, Any] = {"namespace": settings.namespace, "log_to_driver": False,
                              "logging_level": logging.WARNING, **init_kwargs}
    if address is None:
        kwargs.setdefault("num_cpus", settings.local_num_cpus)
        kwargs.setdefault("include_dashboard", False)
    if address is not None and address != "auto":
        probe(address, settings.connect_timeout_s, settings.auth_token())
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        raise classify(exc, settings.ray_address or "a new local Ray",
                       bool(settings.auth_token())) from None
    log.info("connected to Ray at %s", address or "a new local Ray")
    return ray


def classify(exc: BaseException, where: str, has_token: bool) -> RayUnreachable:
    """The one-line error for what ``ray.init`` raised (auth, version, or unreachable)."""
    text = str(exc)
    if any(s in text for s in ("InvalidAuthToken", "Unauthenticated", "authentication token")):
        return auth_refused(where, has_token)
    if "version mismatch" in text.lower():
        return RayVersionMismatch(f"the Ray cluster at {where} runs another version: "
                                  f"{text.splitlines()[0]}")
    return RayUnreachable(f"cannot reach the Ray cluster at {where} ({_ADDRESS_VAR}): "
                          f"{text.splitlines()[0] if text else type(exc).__name__}")


def auth_refused(where: str, has_token: bool) -> RayAuthRefused:
    if has_token:
        return RayAuthRefused(f"the Ray cluster at {where} refused the token of {_TOKEN_VARS} "
                              "(it is not the head's token)")
    return RayAuthRefused(f"the Ray cluster at {where} requires a token: set {_TOKEN_VARS} "
                          "to the head's token (its RAY_AUTH_TOKEN, or ~/.ray/auth_token on "
                          "the head)")


def probe(address: str, timeout_s: float, token: str = "") -> dict[str, str]:
    """One RPC to the cluster, so that each failure is named at once.

    A GCS address gets Ray's cluster metadata (its Ray and Python versions,
    compared with this process's); a Ray client address (``ray://``) a ping.
    Raises :class:`RayUnreachable`, :class:`RayAuthRefused` or
    :class:`RayVersionMismatch`; returns the metadata ({} for a Ray client).
    """
    import grpc

    client = address.startswith("ray://")
    target = address.removeprefix("ray://")
    metadata = [("authorization", f"Bearer {token}")] if token else []
    channel = grpc.insecure_channel(target)
    try:
        if client:
            from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(
                ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING),
                timeout=timeout_s, metadata=metadata)
            return {}
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

        reply = gcs_service_pb2_grpc.InternalKVGcsServiceStub(channel).InternalKVGet(
            gcs_service_pb2.InternalKVGetRequest(namespace=_META_NAMESPACE, key=_META_KEY),
            timeout=timeout_s, metadata=metadata)
    except grpc.RpcError as exc:
        code = exc.code() if hasattr(exc, "code") else None
        if code == grpc.StatusCode.UNAUTHENTICATED:
            raise auth_refused(address, bool(token)) from None
        details = exc.details() if hasattr(exc, "details") else str(exc)
        raise RayUnreachable(f"cannot reach the Ray cluster at {address} ({_ADDRESS_VAR}): "
                             f"{getattr(code, 'name', code)}: {details}") from None
    finally:
        channel.close()
    meta = _metadata(reply.value)
    check_versions(address, meta)
    return meta


def _metadata(raw: bytes) -> dict[str, str]:
    try:
        found = json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def check_versions(address: str, meta: dict[str, str]) -> None:
    """Ray refuses a driver of another Ray version, or of another Python version (to the
    patch, or to the minor with ``RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor``)."""
    import ray

    theirs_ray = meta.get("ray_version")
    theirs_py = meta.get("python_version", "")
    mine_py = "%d.%d.%d" % sys.version_info[:3]
    parts = 2 if os.environ.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL") == "minor" else 3
    if theirs_ray and theirs_ray != ray.__version__:
        raise RayVersionMismatch(
            f"the Ray cluster at {address} runs Ray {theirs_ray}, this process Ray "
            f"{ray.__version__}: install the same Ray on both (the chart's ray.rayVersion)")
    if theirs_py and theirs_py.split(".")[:parts] != mine_py.split(".")[:parts]:
        raise RayVersionMismatch(
            f"the Ray cluster at {address} runs Python {theirs_py}, this process Python "
            f"{mine_py}: Ray needs the same Python on both")


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
