"""One top_k limit, owned by memstrata.limits, at both edges (issue 32)."""

from __future__ import annotations

import pytest

from memstrata.config import ConfigError, Settings, load_settings
from memstrata.integrations.langgraph import MAX_TOP_K as LANGGRAPH_MAX_TOP_K
from memstrata.limits import MAX_TOP_K, SERVICE_MAX_TOP_K, TopKRefused, check_top_k
from query_service.settings import ServiceSettings


def test_both_settings_take_their_limit_and_ceiling_from_limits() -> None:
    core = Settings.model_fields["max_top_k"]
    service = ServiceSettings.model_fields["max_top_k"]
    assert core.default == MAX_TOP_K and service.default == SERVICE_MAX_TOP_K
    assert LANGGRAPH_MAX_TOP_K == SERVICE_MAX_TOP_K <= MAX_TOP_K
    ceilings = {m.le for f in (core, service) for m in f.metadata if hasattr(m, "le")}
    assert ceilings == {MAX_TOP_K}


def test_a_limit_above_the_ceiling_is_refused_naming_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("MEMSTRATA_CONFIG_FILE", raising=False)
    with pytest.raises(ConfigError, match="MEMSTRATA_MAX_TOP_K"):
        load_settings(max_top_k=MAX_TOP_K + 1)


def test_the_check_names_field_limit_and_variable() -> None:
    assert check_top_k(7, 7, "MEMSTRATA_MAX_TOP_K") == 7
    for bad in (0, 8):
        with pytest.raises(TopKRefused) as err:
            check_top_k(bad, 7, "MEMSTRATA_SERVICE_MAX_TOP_K")
        msg = str(err.value)
        assert msg.startswith("top_k:") and "7" in msg and "MEMSTRATA_SERVICE_MAX_TOP_K" in msg
