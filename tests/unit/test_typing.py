"""The packages ship ``py.typed``, so their annotations are a promise: mypy checks them.

Configuration is ``[tool.mypy]`` in pyproject.toml (the pydantic plugin, the
four packages and ``bench``, whose numbers the README quotes; generated stubs
excluded). About 17 s of CPU, one run per session, started in the background
as the session starts (tests/support/early.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.early import mypy_result


@pytest.mark.timeout(300)
def test_mypy_finds_no_errors(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e '.[test]'")
    out = mypy_result(280, tmp_path / "cache")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Success" in out.stdout
