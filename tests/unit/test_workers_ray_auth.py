"""The Ray token setting, the causes ``workers check`` names, and a ``local`` backend that
starts no Ray (no cluster needed: the cases that need one are in
tests/workers/test_ray_auth.py)."""

from __future__ import annotations

import sys

import pytest

from memstrata.config import ConfigError
from workers.settings import WorkersSettings, load_workers_settings


@pytest.mark.parametrize("env,why", [
    ({"MEMSTRATA_WORKERS_RAY_AUTH_TOKEN": "short"}, "expected 16-4096"),
    ({"MEMSTRATA_WORKERS_RAY_AUTH_TOKEN": "has a space in it, sixteen+"}, "without spaces"),
    ({"MEMSTRATA_WORKERS_RAY_AUTH_TOKEN_FILE": "/nonexistent/token"}, "cannot read"),
])
def test_bad_token_settings_are_named(monkeypatch, env, why):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as info:
        load_workers_settings()
    assert why in str(info.value) and next(iter(env)) in str(info.value)


def test_token_and_file_are_exclusive_and_the_file_is_stripped(tmp_path):
    f = tmp_path / "token"
    f.write_text("0123456789abcdef0123\n")
    assert WorkersSettings(ray_auth_token_file=f).auth_token() == "0123456789abcdef0123"
    with pytest.raises(ValueError, match="not both"):
        WorkersSettings(ray_auth_token="x" * 20, ray_auth_token_file=f)
    assert "x" * 20 not in repr(WorkersSettings(ray_auth_token="x" * 20))  # never logged


def test_node_env_carries_the_token_and_dry_run_hides_it():
    from workers.node import node_env, shown_env

    env = node_env(WorkersSettings(ray_auth_token="t" * 32))
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "t" * 32}
    assert "t" * 32 not in shown_env(env) and "RAY_AUTH_MODE=token" in shown_env(env)
    assert node_env(WorkersSettings()) == {}


def test_version_mismatch_is_named():
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    from workers.cluster import RayVersionMismatch, check_versions

    py = "%d.%d.%d" % sys.version_info[:3]
    check_versions("h:1", {"ray_version": ray.__version__, "python_version": py})
    with pytest.raises(RayVersionMismatch, match="runs Ray 2.9.0, this process Ray"):
        check_versions("h:1", {"ray_version": "2.9.0", "python_version": py})
    with pytest.raises(RayVersionMismatch, match="runs Python 2.7.18"):
        check_versions("h:1", {"ray_version": ray.__version__, "python_version": "2.7.18"})


@pytest.mark.parametrize("text,kind,named", [
    ("Failed to get cluster ID: Unauthenticated: InvalidAuthToken", "RayAuthRefused",
     "MEMSTRATA_WORKERS_RAY_AUTH_TOKEN"),
    ("Version mismatch: The cluster was started with:\n    Ray: 2.9.0", "RayVersionMismatch",
     "another version"),
    ("Failed to connect to Ray cluster at h:1", "RayUnreachable",
     "MEMSTRATA_WORKERS_RAY_ADDRESS"),
])
def test_what_ray_init_raised_is_classified(text, kind, named):
    from workers.cluster import classify

    exc = classify(ConnectionError(text), "h:1", has_token=False)
    assert type(exc).__name__ == kind and named in str(exc) and "\n" not in str(exc)


def test_check_with_the_local_backend_starts_no_ray(monkeypatch):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    from workers.cluster import RayUnreachable
    from workers.node import check

    def no_init(*_a, **_k):
        raise AssertionError("workers check started a Ray with the local backend")

    monkeypatch.setattr(ray, "init", no_init)
    assert "no Ray is used" in check(WorkersSettings(backend="local"))
    # An address with the local backend is probed, not joined, and said to be unused.
    with pytest.raises(RayUnreachable, match="127.0.0.1:1"):
        check(WorkersSettings(backend="local", ray_address="127.0.0.1:1"))


def test_tenants_added_while_serving_reach_the_pool_or_are_counted(tmp_path, caplog):
    """Server stores: any tenant goes to the pool. Embedded stores: a tenant added after
    start runs in-process, said once in the log and counted on each answer."""
    from memstrata.config import Settings
    from workers.metrics import WorkersMetrics
    from workers.readers import ServiceReaderSpec, StoreReaderSpec
    from workers.service import pool_tenants

    metrics = WorkersMetrics()
    assert "added-later" in pool_tenants(StoreReaderSpec(Settings(data_dir=tmp_path)),
                                         {"acme"}, metrics)
    embedded = pool_tenants(ServiceReaderSpec("127.0.0.1:1", (("acme", "k"),)), {"acme"},
                            metrics)
    assert "acme" in embedded
    with caplog.at_level("WARNING", logger="workers.service"):
        assert "added-later" not in embedded
        assert "added-later" not in embedded
    assert sum("added-later" in r.getMessage() for r in caplog.records) == 1
    skipped = metrics.registry.get_sample_value(
        "memstrata_workers_rollouts_in_process_total", {"reason": "tenant_not_in_pool"})
    assert skipped == 2
