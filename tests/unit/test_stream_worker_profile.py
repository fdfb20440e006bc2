"""The stream worker's settings profile is named and never overrides a set value (issue 32)."""

from __future__ import annotations

from memstrata.config import Settings, load_settings
from streams.runtime import WORKER_PROFILE, worker_settings


def test_the_profile_fills_only_what_nobody_set(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("MEMSTRATA_CONFIG_FILE", raising=False)
    monkeypatch.delenv("MEMSTRATA_TANTIVY_COMMIT", raising=False)
    base = load_settings(data_dir=tmp_path)
    assert base.tantivy_commit == Settings.model_fields["tantivy_commit"].default == "write"
    got, applied = worker_settings(base)
    assert applied == WORKER_PROFILE == {"tantivy_commit": "flush"}
    assert got.tantivy_commit == "flush" and base.tantivy_commit == "write"


def test_an_operators_value_wins_over_the_profile(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("MEMSTRATA_CONFIG_FILE", raising=False)
    monkeypatch.setenv("MEMSTRATA_TANTIVY_COMMIT", "write")
    got, applied = worker_settings(load_settings(data_dir=tmp_path))
    assert applied == {} and got.tantivy_commit == "write"
