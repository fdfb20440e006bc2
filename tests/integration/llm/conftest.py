"""One real llama-server (Gemma 3 270M) for the whole test session.

The binary and the model come from the cache that
``python -m tests.support.llama_server build`` fills (a CI stage before
pytest). Without them the tests are skipped on a developer's machine, but
fail in CI (``CI`` set) or when ``LLAMA_SERVER_STAGE=ran`` says the stage ran:
there they must run. ``LLAMA_SERVER_STAGE=skipped`` skips them anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import llama_server
from tests.support.llama_server import LlamaServer


def llama_files() -> tuple[Path, Path]:
    """The cached binary and model, or skip/fail with the reason."""
    binary, model = llama_server.binary_path(), llama_server.model_path()
    missing = [str(p) for p in (binary, model) if not p.is_file()]
    if not missing:
        return binary, model
    stage = os.environ.get(llama_server.STAGE_ENV, "")
    how = "build them with `python -m tests.support.llama_server build` (a few minutes)"
    if stage == "ran" or (stage != "skipped" and os.environ.get("CI")):
        pytest.fail(f"llama-server stage ran (or CI) but {', '.join(missing)} is missing; {how}")
    pytest.skip(f"llama-server/Gemma not built ({', '.join(missing)} missing) and "
                f"{llama_server.STAGE_ENV} is not 'ran' outside CI; {how}")


@pytest.fixture(scope="session")
def llama_paths() -> tuple[Path, Path]:
    return llama_files()


@pytest.fixture(scope="session")
def llama(llama_paths: tuple[Path, Path],
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    binary, model = llama_paths
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    server = llama_server.start(binary, model, log)
    try:
        yield server
    finally:
        server.stop()
