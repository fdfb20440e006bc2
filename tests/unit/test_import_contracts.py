"""Which way imports may go, checked by import-linter over the code as it is.

The contracts are ``[tool.importlinter]`` in pyproject.toml: the core imports
no service (the CLI included: it finds their commands by entry point), the
services do not import each other, the client and the wire package import no engine, and the core's
packages are layered (evidence below synth below controller; store, embed and
llm below everything that uses them), and so are the Kafka wing's modules
(its settings at the bottom: no circle). import-linter reads every import,
including those inside functions and under ``TYPE_CHECKING``.

The second test plants one forbidden import per contract in a copy of the
packages and expects import-linter to report that contract broken, so a
contract that silently matches nothing cannot pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter comes with the test extra")

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memstrata", "streams", "query_service", "workers")


def _lint(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_import_contracts_are_kept() -> None:
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


@pytest.mark.parametrize(("probe", "line", "contract"), [
    ("memstrata/memory_probe.py", "import streams.topics", "The core imports no service"),
    # The CLI too: it finds the services' commands by entry point (memstrata.cli.plugins).
    ("memstrata/cli/probe.py", "import query_service.cli", "The core imports no service"),
    ("streams/probe.py", "import query_service.settings", "The services do not import"),
    ("memstrata/client/probe.py", "import numpy", "The client imports no engine"),
    ("memstrata/client/probe.py", "from memstrata.controller import run",
     "The client imports no engine"),
    ("memstrata/evidence/probe.py", "import memstrata.synth.answer", "Layers of the core"),
    ("memstrata/synth/probe.py", "import memstrata.controller.run", "Layers of the core"),
    ("memstrata/store/probe.py", "import memstrata.retrieval.hybrid", "Layers of the core"),
    ("memstrata/llm/probe.py", "import memstrata.memory", "Layers of the core"),
    ("memstrata/controller/probe.py", "import memstrata.store.types",
     "The controller reads memory only"),
    ("memstrata/mcp/probe.py", "import memstrata.memory",
     "The MCP server speaks to memory only through the client"),
    # The circle issue 32 removed: settings importing security back. The probe replaces
    # the copy's settings module (a new module would sit in none of the wing's layers).
    ("memstrata/kafka/settings.py", "from memstrata.kafka.security import kafka_client_kwargs",
     "The Kafka wing"),
])
def test_a_planted_forbidden_import_breaks_its_contract(tmp_path: Path, probe: str, line: str,
                                                       contract: str) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / probe).write_text(f"{line}\n")
    # The copies come first on the path (the editable install's finder comes after it).
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = _lint(tmp_path, env)
    assert out.returncode == 1, out.stdout[-4000:] + out.stderr[-2000:]
    broken = [ln for ln in out.stdout.splitlines() if ln.endswith("BROKEN")
              or " BROKEN (" in ln]
    assert len(broken) == 1 and broken[0].startswith(contract), out.stdout[-3000:]
    assert probe.replace("/", ".").removesuffix(".py") in out.stdout
