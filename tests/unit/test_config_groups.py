"""The core settings in typed groups, one per concern, with every name unchanged (issue 32).

Each field is declared once, in its group; ``Settings`` inherits the groups so
``MEMSTRATA_RRF_K``, the file's ``rrf_k`` and ``settings.rrf_k`` stay as they
were, and ``settings.retrieval`` is a frozen ``RetrievalGroup`` built from the
flat values.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from memstrata.config import (
    GROUP_CLASSES,
    GROUPS,
    ConfigError,
    RetrievalGroup,
    Settings,
    SettingsGroup,
    load_config,
    load_settings,
    settings_namespaces,
    table_of,
)

#: One non-default value per group, set through its flat variable.
NON_DEFAULTS = {
    "MEMSTRATA_CONFIG_FILE": None,  # set by the test to its own file
    "MEMSTRATA_LLM_TEMPERATURE": "0.7",
    "MEMSTRATA_EMBED_BATCH_SIZE": "16",
    "MEMSTRATA_TANTIVY_COMMIT": "flush",
    "MEMSTRATA_L0_WINDOW_TURNS": "6",
    "MEMSTRATA_RRF_K": "33",
    "MEMSTRATA_FLUSH_POLICY": "call",
}


def test_every_flat_field_is_in_exactly_one_group_in_declaration_order() -> None:
    declared = Counter(f for cls in GROUP_CLASSES.values() for f in cls.model_fields)
    assert [f for f, n in declared.items() if n > 1] == []
    assert list(declared) == list(Settings.model_fields)
    assert {name: tuple(cls.model_fields) for name, cls in GROUP_CLASSES.items()} == GROUPS


def test_every_default_is_declared_once_in_its_group() -> None:
    # Settings declares no field of its own: each comes, with its default and
    # bounds, from the one group that declares it.
    own = set(vars(Settings).get("__annotations__", {}))
    assert own & set(Settings.model_fields) == set()
    for cls in GROUP_CLASSES.values():
        assert issubclass(Settings, cls)
        for name, info in cls.model_fields.items():
            flat = Settings.model_fields[name]
            assert (flat.annotation, flat.metadata) == (info.annotation, info.metadata), name
            assert flat.get_default(call_default_factory=True) == info.get_default(
                call_default_factory=True), name


def test_each_group_equals_the_flat_values(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    f = tmp_path / "memstrata.toml"
    f.write_text("max_queries = 5\n[stores]\nqdrant_collection = \"units\"\n", encoding="utf-8")
    for name, value in NON_DEFAULTS.items():
        monkeypatch.setenv(name, value if value is not None else str(f))
    s = load_settings(data_dir=tmp_path)
    assert (s.llm_temperature, s.embed_batch_size, s.tantivy_commit, s.l0_window_turns,
            s.rrf_k, s.flush_policy, s.max_queries, s.qdrant_collection) == (
        0.7, 16, "flush", 6, 33, "call", 5, "units")
    for name, cls in GROUP_CLASSES.items():
        group = getattr(s, name)
        assert type(group) is cls and s.group(name) == group
        assert group.model_dump() == {f: getattr(s, f) for f in GROUPS[name]}, name
    assert s.paths.docs_path == s.docs_path == tmp_path / "docs.sqlite3"
    assert s.llm.llm_timeout_for("judge") == s.llm_timeout_for("generator")


def test_a_group_is_a_typed_frozen_snapshot() -> None:
    s = Settings.model_construct()
    retrieval: RetrievalGroup = s.retrieval
    with pytest.raises(ValidationError, match="frozen"):
        retrieval.rrf_k = 1  # type: ignore[misc]
    with pytest.raises(AttributeError, match="llm_temperature"):
        _ = retrieval.llm_temperature  # type: ignore[attr-defined]
    with pytest.raises(KeyError, match="no settings group 'nope'"):
        s.group("nope")
    assert isinstance(s, RetrievalGroup) and isinstance(retrieval, SettingsGroup)


def test_no_group_shares_its_name_with_a_namespace_table() -> None:
    tables = {table_of(prefix) for prefix in settings_namespaces()[0]}
    assert tables and set(GROUPS) & tables == set()


def test_a_groups_table_in_the_file_sets_the_flat_fields(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    f = tmp_path / "memstrata.toml"
    f.write_text("max_queries = 4\n[retrieval]\nrrf_k = 42\n[llm]\nllm_temperature = 0.5\n"
                 "[stream]\nbatch_max = 7\n", encoding="utf-8")
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    monkeypatch.setenv("MEMSTRATA_LLM_TEMPERATURE", "0.25")
    config = load_config(data_dir=tmp_path)
    s = config.settings
    assert (s.rrf_k, s.retrieval.rrf_k, s.max_queries, s.llm_temperature) == (42, 42, 4, 0.25)
    assert config.sources[""]["rrf_k"] == "file"
    assert config.sources[""]["llm_temperature"] == "env"
    assert config.sources["stream"]["batch_max"] == "file"
    assert load_settings(data_dir=tmp_path).rrf_k == 42


def test_bad_keys_of_a_groups_table_are_named(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("rrf_k = 5\n[retrieval]\nrrf_k = 0\nllm_temperature = 1.0\nnot_a_key = 1\n"
                 "[layers]\nl0_window_turns = 0\n[nosuch]\nx = 1\n", encoding="utf-8")
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    with pytest.raises(ConfigError) as exc:
        load_config(data_dir=tmp_path)
    text = str(exc.value)
    assert f"[retrieval] llm_temperature in {f}: not a setting of the retrieval group " \
           "(it is in [llm])" in text
    assert f"[retrieval] not_a_key in {f}: not a setting of the retrieval group;" in text
    assert f"rrf_k in {f}: given twice, also as [retrieval] rrf_k" in text
    assert f"[layers] l0_window_turns in {f}: Input should be greater than or equal to 1" in text
    assert f"[nosuch] in {f}: no settings namespace 'nosuch'" in text
    with pytest.raises(ConfigError, match=r"\[retrieval\] llm_temperature"):
        load_settings(data_dir=tmp_path)
