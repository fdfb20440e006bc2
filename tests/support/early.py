"""Slow, self-contained checks started in the background when the session starts.

mypy spends about 15 s of CPU and needs nothing from the other tests. Started as
soon as collection has chosen it, at low priority, it runs on the core the
suite leaves idle (most tests wait on brokers, servers and timeouts), and the
test that asserts on it only collects the finished result. Run alone (no early
start), the test runs the same command itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MYPY_TEST = "tests/unit/test_typing.py::test_mypy_finds_no_errors"


def mypy_command(cache_dir: Path) -> list[str]:
    """The one mypy run the suite makes ([tool.mypy] in pyproject.toml, a fresh cache)."""
    return [sys.executable, "-m", "mypy", "--cache-dir", str(cache_dir)]


@dataclass
class Background:
    """A subprocess started early; ``result`` waits for it and returns what it printed."""

    args: list[str]
    proc: subprocess.Popen[str]
    workdir: Path
    _out: tuple[str, str] | None = field(default=None)

    def result(self, timeout_s: float) -> subprocess.CompletedProcess[str]:
        if self._out is None:
            self._out = self.proc.communicate(timeout=timeout_s)
        return subprocess.CompletedProcess(self.args, self.proc.returncode, *self._out)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()
        shutil.rmtree(self.workdir, ignore_errors=True)


_running: dict[str, Background] = {}


def start_mypy() -> None:
    """Start the mypy run now, at the lowest CPU priority (once per session)."""
    if MYPY_TEST in _running:
        return
    workdir = Path(tempfile.mkdtemp(prefix="memstrata-mypy-"))
    args = mypy_command(workdir / "cache")
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: os.nice(19))
    _running[MYPY_TEST] = Background(args, proc, workdir)


def mypy_result(timeout_s: float, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    """The early run's result if one was started, else a run of the same command now."""
    early = _running.get(MYPY_TEST)
    if early is not None:
        return early.result(timeout_s)
    return subprocess.run(mypy_command(cache_dir), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout_s)


def stop_all() -> None:
    """End whatever is still running (a session cut short) and remove its files."""
    while _running:
        _running.popitem()[1].stop()
