"""Settings: MEMSTRATA_* variables, an optional TOML file, and errors that name the variable."""

from pathlib import Path

import pytest

from memstrata.config import ConfigError, load_settings


def test_defaults_are_the_embedded_offline_stack(monkeypatch: pytest.MonkeyPatch):
    for name in ("MEMSTRATA_CONFIG_FILE", "MEMSTRATA_LLM_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings()
    assert (s.llm_backend, s.embed_backend, s.vector_backend, s.lexical_backend,
            s.doc_backend) == ("extractive", "minilm", "qdrant-edge", "tantivy", "sqlite")
    assert (s.fusion, s.rrf_k, s.dense_weight, s.keyword_alpha, s.top_k_sessions) == (
        "dbsf", 60, 0.3, 0.1, 20
    )
    assert s.coverage_weighting is True
    assert (s.l0_window_turns, s.l0_window_overlap, s.l0_max_window_chars) == (4, 1, 6000)


def test_environment_variables_are_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("MEMSTRATA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMSTRATA_RRF_K", "30")
    s = load_settings()
    assert s.data_dir == tmp_path and s.rrf_k == 30
    assert s.docs_path == tmp_path / "docs.sqlite3"


def test_toml_file_is_read_and_environment_wins(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path):
    f = tmp_path / "memstrata.toml"
    f.write_text('top_k_sessions = 7\nrrf_k = 10\nqdrant_collection = "units"\n')
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    monkeypatch.setenv("MEMSTRATA_RRF_K", "15")
    s = load_settings()
    assert (s.top_k_sessions, s.rrf_k, s.qdrant_collection) == (7, 15, "units")


def test_missing_config_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="MEMSTRATA_CONFIG_FILE: no such file"):
        load_settings()


@pytest.mark.parametrize(("env", "message"), [
    ({"MEMSTRATA_RRF_K": "0"}, "MEMSTRATA_RRF_K: Input should be greater than or equal to 1"),
    ({"MEMSTRATA_DENSE_WEIGHT": "1.5"}, "MEMSTRATA_DENSE_WEIGHT"),
    ({"MEMSTRATA_VECTOR_BACKEND": "faiss"}, "MEMSTRATA_VECTOR_BACKEND"),
    ({"MEMSTRATA_VECTOR_BACKEND": "qdrant"},
     "MEMSTRATA_QDRANT_URL is required when MEMSTRATA_VECTOR_BACKEND=qdrant"),
    ({"MEMSTRATA_DOC_BACKEND": "opensearch"}, "MEMSTRATA_OPENSEARCH_URL is required"),
    ({"MEMSTRATA_LLM_BACKEND": "openai"}, "MEMSTRATA_LLM_BASE_URL or MEMSTRATA_LLM_API_KEY"),
    ({"MEMSTRATA_L0_WINDOW_TURNS": "2", "MEMSTRATA_L0_WINDOW_OVERLAP": "2"},
     "MEMSTRATA_L0_WINDOW_OVERLAP (2) must be smaller than MEMSTRATA_L0_WINDOW_TURNS (2)"),
    ({"MEMSTRATA_NOT_A_SETTING": "1"}, "not_a_setting"),
])
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, env, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as exc:
        load_settings()
    assert message.lower() in str(exc.value).lower()


def test_secrets_are_not_echoed(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTRATA_LLM_BACKEND", "openai")
    monkeypatch.setenv("MEMSTRATA_LLM_API_KEY", "sk-very-secret")
    monkeypatch.setenv("MEMSTRATA_LLM_TIMEOUT_S", "-1")
    with pytest.raises(ConfigError) as exc:
        load_settings()
    assert "sk-very-secret" not in str(exc.value)
    assert "MEMSTRATA_LLM_TIMEOUT_S" in str(exc.value)
