"""RetrievalParams takes every default from Settings, so the two cannot drift (issue 32)."""

from __future__ import annotations

import dataclasses

from memstrata.config import Settings, defaults
from memstrata.retrieval.hybrid import SETTING_OF, RetrievalParams

#: Params fields that are deliberately not settings (only a route plan sets them).
NOT_SETTINGS = {"graph_boost"}


def test_every_param_default_equals_its_setting_default() -> None:
    fields = {f.name: f.default for f in dataclasses.fields(RetrievalParams)}
    checked = 0
    for name, default in fields.items():
        if name in NOT_SETTINGS or name == "dense_skip_coverage":
            continue
        setting = SETTING_OF.get(name, name)
        assert setting in Settings.model_fields, f"{name}: no Settings.{setting}"
        assert default == Settings.model_fields[setting].default, name
        checked += 1
    assert checked >= 18


def test_params_from_default_settings_are_the_bare_params() -> None:
    assert RetrievalParams.from_settings(defaults(Settings)) == RetrievalParams()



def test_the_retrievers_settings_are_its_group() -> None:
    from memstrata.config import GROUPS

    read = {SETTING_OF.get(f.name, f.name) for f in dataclasses.fields(RetrievalParams)}
    read = (read - NOT_SETTINGS) | {"dense_skip"}
    # The query vector cache is the encoder's (embedding group); the rest is retrieval.
    assert read - set(GROUPS["retrieval"]) == {"query_cache_size"}
