"""One local Ray per test session (2 CPUs, no dashboard, its own temp dir), and one
ingested memory.

Ray workers import the test doubles from ``tests.support``, so the repository
root goes on their PYTHONPATH before Ray starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.eval.datasets import load_dataset
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "locomo_mini.json"


def ray_env() -> None:
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    ray_env()
    temp_dir = tempfile.mkdtemp(prefix="msrayl")  # short: Ray's socket paths live under it
    if not ray.is_initialized():
        # A temp dir of its own: with none, ray.init joins whatever cluster another process
        # on this machine recorded in /tmp/ray (ray.cluster_utils.Cluster records one).
        ray.init(num_cpus=2, include_dashboard=False, namespace="memstrata-tests",
                 log_to_driver=False, _temp_dir=temp_dir)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def dataset() -> Any:
    return load_dataset(FIXTURE, "locomo")


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, dataset: Any, embedder: Any,
           ) -> Iterator[Memory]:
    s = Settings(data_dir=tmp_path_factory.mktemp("workers"))
    m = Memory(s, ExtractiveBuilder(), embedder, open_vector_store(s, embedder.dim),
               open_lexical_store(s), open_doc_store(s))
    m.ingest(dataset.parsed.sessions)
    yield m
    m.close()
