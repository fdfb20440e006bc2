"""The README's example file ingested once per session through the real CLI.

Several e2e tests need a data dir holding ``examples/sample_turns.jsonl`` before
they start what they test (a serve, a holder, an ask). ``memstrata ingest``
costs an interpreter, the encoder and the stores each time, so it runs once
here (its output checked) and each test gets its own copy of the result: a
closed data dir is plain files, and a copy behaves as the original (the tests
of reingest and forget run on copies).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_cli import SAMPLE, run


@pytest.fixture(scope="session")
def sample_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sample-template") / "data"
    r = run("ingest", str(SAMPLE), data_dir=d)
    assert r.returncode == 0, r.stderr
    assert "5 ingested (11 turns, 11 L0 units)" in r.stdout
    assert "users: tenant=acme users=leo,maya; tenant=globex users=maya" in r.stdout
    return d


@pytest.fixture(scope="session")
def sample_copy(sample_template: Path) -> Callable[[Path], Path]:
    """``sample_copy(dest)``: a data dir at ``dest`` as ``memstrata ingest SAMPLE`` leaves it."""
    def copy(dest: Path) -> Path:
        shutil.copytree(sample_template, dest, dirs_exist_ok=True)
        return dest

    return copy
