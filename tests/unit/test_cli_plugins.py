"""The CLI finds the services' commands by entry point (memstrata.cli.plugins), in place.

The core imports no service (tests/unit/test_import_contracts.py); these tests
check the other half: every service's commands are installed and reach
``memstrata --help`` where they were, a name the core does not know comes last,
and a missing host is named with what to install.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memstrata.cli import plugins


def test_every_service_slot_is_installed_and_loads() -> None:
    """pyproject's ``memstrata.commands`` names each slot the core places (reinstall if not)."""
    installed = plugins._commands()
    assert set(plugins.COMMAND_ORDER) <= set(installed), sorted(installed)
    for name in plugins.COMMAND_ORDER:
        assert callable(installed[name].load()), name


def test_the_services_commands_keep_their_place_in_help() -> None:
    out = subprocess.run([sys.executable, "-m", "memstrata", "--help"], capture_output=True,
                         text=True, timeout=60, env={"COLUMNS": "120", "PATH": ""})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    # As before the commands moved into the services (typer lists the groups last).
    order = ["ingest", "ask", "produce", "worker", "up", "check", "migrate", "serve", "mcp",
             "export", "profile", "eval", "keys", "audit", "workers", "topics", "retention"]
    at = [text.find(f"│ {name} ") for name in order]
    assert -1 not in at, [n for n, i in zip(order, at) if i == -1]
    assert at == sorted(at), list(zip(order, at))


@dataclass
class _FakeEntryPoint:
    """A test double of an installed entry point: ``load()`` gives ``target``."""

    name: str
    target: Any

    def load(self) -> Any:
        return self.target


def test_a_registration_the_core_does_not_place_comes_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = typer.Typer(no_args_is_help=True)
    calls: list[str] = []

    def first(app: typer.Typer) -> None:
        calls.append("first")

        @app.command()
        def alpha() -> None:
            """Placed by the core."""

    def extra(app: typer.Typer) -> None:
        calls.append("extra")

        @app.command()
        def zulu() -> None:
            """From a package the core does not know."""

    fake = {"first": _FakeEntryPoint("first", first), "extra": _FakeEntryPoint("extra", extra)}
    monkeypatch.setattr(plugins, "_commands", lambda: fake)
    done: set[str] = set()
    plugins.register_commands(app, "first", done)
    plugins.register_commands(app, "missing", done)  # not installed: nothing, no error
    plugins.register_the_rest(app, done)
    plugins.register_the_rest(app, done)  # each registration runs once
    assert calls == ["first", "extra"]
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert result.output.index("alpha") < result.output.index("zulu")


def test_a_missing_host_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    with pytest.raises(LookupError, match=r"embedded_stream.*memstrata\[kafka\]"):
        plugins.find_host("embedded_stream")
