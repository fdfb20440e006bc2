"""``MEMSTRATA_WORKERS_*``: bad values stop start-up naming the variable; the namespace
is registered, so its variables are not reported as unknown."""

from __future__ import annotations

import pytest

from memstrata.config import ConfigError, unknown_variables
from workers.settings import load_workers_settings


@pytest.mark.parametrize("var,value,why", [
    ("MEMSTRATA_WORKERS_BACKEND", "kubernetes", "'local' or 'ray'"),
    ("MEMSTRATA_WORKERS_RAY_ADDRESS", "ray:/head:10001", "expected 'auto'"),
    ("MEMSTRATA_WORKERS_RAY_ADDRESS", "head:99999", "out of range"),
    ("MEMSTRATA_WORKERS_ROLLOUT_ACTORS", "0", "greater than or equal to 1"),
    ("MEMSTRATA_WORKERS_MATERIALIZERS", "0", "greater than or equal to 1"),
    ("MEMSTRATA_WORKERS_PREWARM", "always", "'off', 'recent' or 'hot'"),
])
def test_bad_value_is_refused_naming_the_variable(monkeypatch, var: str, value: str, why: str):
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as info:
        load_workers_settings()
    assert var in str(info.value) and why in str(info.value)


def test_good_values_and_registered_namespace(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "ray")
    monkeypatch.setenv("MEMSTRATA_WORKERS_RAY_ADDRESS", "ray://head:10001")
    s = load_workers_settings()
    assert s.backend == "ray" and s.ray_address == "ray://head:10001"
    assert load_workers_settings(ray_address="auto").ray_address == "auto"
    assert unknown_variables({"MEMSTRATA_WORKERS_BACKEND": "ray",
                              "MEMSTRATA_WORKERS_BAKEND": "ray"}) == ["MEMSTRATA_WORKERS_BAKEND"]


def test_unreachable_ray_names_the_address():
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    if ray.is_initialized():
        pytest.skip("a Ray is already connected in this process")
    from workers.cluster import RayUnreachable, connect

    with pytest.raises(RayUnreachable, match="127.0.0.1:1.*MEMSTRATA_WORKERS_RAY_ADDRESS"):
        connect(load_workers_settings(ray_address="127.0.0.1:1"))
    assert not ray.is_initialized()


def test_workers_cli_refuses_bad_settings_naming_them(monkeypatch, capsys):
    from workers.__main__ import main

    monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "bogus")
    assert main(["check"]) == 2
    assert "MEMSTRATA_WORKERS_BACKEND" in capsys.readouterr().err
    monkeypatch.delenv("MEMSTRATA_WORKERS_BACKEND")
    assert main(["node", "--address", "ray://head:10001"]) == 2
    assert "GCS address" in capsys.readouterr().err
    assert main(["node", "--address", "head:0x1"]) == 2
    assert "MEMSTRATA_WORKERS_RAY_ADDRESS" in capsys.readouterr().err


def test_memstrata_workers_command(monkeypatch, tmp_path):
    """``memstrata workers``: node and head lines run this environment's ray; bad input
    exits 2 naming the option or variable; an unreachable cluster exits 4."""
    import sys
    from pathlib import Path

    from typer.testing import CliRunner

    from memstrata.cli import _register_subcommands, app

    _register_subcommands()
    run = CliRunner().invoke
    res = run(app, ["workers", "node", "--address", "head:6379", "--num-cpus", "3",
                    "--dry-run", "--object-store-memory=100000000"])
    assert res.exit_code == 0, res.output
    line = res.output.split()
    assert Path(line[0]).parent == Path(sys.executable).parent or line[0].endswith("ray")
    assert line[1:5] == ["start", "--address=head:6379", "--block", "--disable-usage-stats"]
    assert "--num-cpus=3" in line and line[-1] == "--object-store-memory=100000000"
    res = run(app, ["workers", "head", "--port", "7000", "--dry-run"])
    assert res.exit_code == 0 and "--head --port=7000" in res.output
    res = run(app, ["workers", "node", "--address", "ray://head:10001", "--dry-run"])
    assert res.exit_code == 2 and "GCS address" in res.output
    monkeypatch.setenv("MEMSTRATA_WORKERS_RAY_ADDRESS", "head:0x1")
    res = run(app, ["workers", "node", "--dry-run"])  # the address from the variable
    assert res.exit_code == 2 and "MEMSTRATA_WORKERS_RAY_ADDRESS" in res.output
    monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "bogus")
    res = run(app, ["workers", "check"])
    assert res.exit_code == 2 and "MEMSTRATA_WORKERS_BACKEND" in res.output
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import ray

    if ray.is_initialized():
        return  # check would use this process's connection instead of the address
    monkeypatch.setenv("MEMSTRATA_WORKERS_BACKEND", "ray")
    monkeypatch.setenv("MEMSTRATA_WORKERS_RAY_ADDRESS", "127.0.0.1:1")
    res = run(app, ["workers", "check"])
    assert res.exit_code == 4 and "127.0.0.1:1" in res.output
