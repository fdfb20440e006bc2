"""The settings reference page is generated from the settings classes: it must match them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "settings_reference", ROOT / "docs" / "tools" / "settings_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_page_matches_the_code() -> None:
    page = (ROOT / "docs" / "settings-reference.md").read_text(encoding="utf-8")
    assert page == _tool().render(), (
        "docs/settings-reference.md is stale: run "
        "`python docs/tools/settings_reference.py --write`")


def test_every_namespace_and_a_known_variable_are_listed() -> None:
    page = _tool().render()
    for name in ("MEMSTRATA_DATA_DIR", "MEMSTRATA_STREAM_IDLE_S", "MEMSTRATA_KAFKA_BROKERS",
                 "MEMSTRATA_SERVICE_", "MEMSTRATA_CONTROLLER_", "MEMSTRATA_API_KEY"):
        assert name in page
