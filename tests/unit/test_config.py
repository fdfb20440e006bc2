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


def test_config_file_argument_and_variable_name_the_same_file(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv("MEMSTRATA_CONFIG_FILE", raising=False)
    f = tmp_path / "m.toml"
    f.write_text("rrf_k = 11\n")
    by_arg = load_settings(config_file=f)
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    by_env = load_settings()
    assert by_arg.rrf_k == by_env.rrf_k == 11
    assert by_arg.config_file == by_env.config_file == f


def _forget_plugins():
    from memstrata import config

    config._plugin_namespaces.cache_clear()


def test_the_controller_namespace_is_checked_field_by_field(monkeypatch: pytest.MonkeyPatch):
    from memstrata.config import unknown_variables

    env = {"MEMSTRATA_CONTROLLER_MAX_STEPS": "5", "MEMSTRATA_CONTROLLER_MAX_STEPZ": "5",
           "MEMSTRATA_NOSUCHSERVICE_BROKERS": "x"}
    assert unknown_variables(env) == ["MEMSTRATA_CONTROLLER_MAX_STEPZ",
                                      "MEMSTRATA_NOSUCHSERVICE_BROKERS"]


def test_a_service_registers_its_namespace_through_the_entry_point(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A real (if tiny) installed distribution on sys.path declares the entry point."""
    from memstrata.config import load_settings, settings_namespaces, unknown_variables

    (tmp_path / "toy_stream_settings.py").write_text(
        "from pydantic_settings import BaseSettings, SettingsConfigDict\n"
        "class StreamSettings(BaseSettings):\n"
        "    model_config = SettingsConfigDict(env_prefix='MEMSTRATA_TOYSTREAM_')\n"
        "    topic: str = 'turns'\n"
        "    batch_size: int = 100\n")
    dist = tmp_path / "toy_stream-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-stream\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[memstrata.settings]\ntoystream = toy_stream_settings:StreamSettings\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _forget_plugins()
    try:
        namespaces, failed = settings_namespaces()
        assert "MEMSTRATA_TOYSTREAM_" in namespaces and "MEMSTRATA_CONTROLLER_" in namespaces
        assert failed == {}
        env = {"MEMSTRATA_TOYSTREAM_TOPIC": "t", "MEMSTRATA_TOYSTREAM_TOPICS": "t"}
        assert unknown_variables(env) == ["MEMSTRATA_TOYSTREAM_TOPICS"]
        monkeypatch.setenv("MEMSTRATA_TOYSTREAM_BATCH_SIZE", "10")
        load_settings()  # accepted
        monkeypatch.setenv("MEMSTRATA_NOSUCHSERVICE_COUNT", "2")
        with pytest.raises(ConfigError,
                           match="MEMSTRATA_NOSUCHSERVICE_COUNT: not a memstrata setting"):
            load_settings()
    finally:
        _forget_plugins()


def test_a_broken_registration_is_reported_not_fatal(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path):
    from memstrata.config import load_settings

    dist = tmp_path / "toy_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[memstrata.settings]\nbroken = no_such_mod:X\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _forget_plugins()
    try:
        load_settings()  # nothing unknown set: a broken plug-in costs nothing
        monkeypatch.setenv("MEMSTRATA_BROKEN_X", "1")
        with pytest.raises(ConfigError, match="namespace 'broken' failed to load"):
            load_settings()
    finally:
        _forget_plugins()


def test_hard_coded_knobs_are_settings_with_the_old_defaults(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("MEMSTRATA_CONFIG_FILE", raising=False)
    s = load_settings()
    assert (s.qdrant_edge_hnsw_m, s.qdrant_edge_hnsw_ef_construct,
            s.qdrant_edge_full_scan_threshold_kb, s.tantivy_heap_bytes) == (16, 100, 10_000,
                                                                            64_000_000)
    assert (s.opensearch_timeout_s, s.opensearch_max_retries, s.max_top_k,
            s.units_per_hit) == (10.0, 2, 1000, 5)
    with pytest.raises(ConfigError, match="MEMSTRATA_TOP_K_SESSIONS"):
        load_settings(top_k_sessions=50, max_top_k=10)


# -- one loader for every namespace (issue 17, item 2) ---------------------------------

def test_the_file_applies_to_every_namespace_and_the_environment_wins(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from memstrata.config import load_config
    from memstrata.kafka import KafkaSettings
    from query_service.settings import ServiceSettings
    from streams.settings import StreamSettings

    f = tmp_path / "memstrata.toml"
    f.write_text('rrf_k = 12\n[stream]\nbatch_max = 7\nidle_s = 9.0\n'
                 '[kafka]\ntopic_turns = "t.turns"\n[service]\nport = 6000\n')
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    monkeypatch.setenv("MEMSTRATA_STREAM_IDLE_S", "4")
    config = load_config()
    stream = config.get(StreamSettings)
    assert (config.settings.rrf_k, stream.batch_max, stream.idle_s) == (12, 7, 4.0)
    assert config.get(KafkaSettings).topic_turns == "t.turns"
    assert config.get(ServiceSettings).port == 6000
    assert config.sources["stream"]["batch_max"] == "file"
    assert config.sources["stream"]["idle_s"] == "env"
    assert config.sources["stream"]["freshness_s"] == "default"
    assert config.sources[""]["rrf_k"] == "file"


@pytest.mark.parametrize(("var", "value"), [
    ("MEMSTRATA_STREAM_BATCH_MAX", "-5"),
    ("MEMSTRATA_KAFKA_PARTITIONS", "0"),
    ("MEMSTRATA_SERVICE_PORT", "70000"),
    ("MEMSTRATA_API_TIMEOUT_S", "0"),
    ("MEMSTRATA_CONTROLLER_MAX_STEPS", "0"),
    ("MEMSTRATA_WORKERS_MATERIALIZERS", "0"),
])
def test_every_namespace_names_the_variable(monkeypatch: pytest.MonkeyPatch, var: str,
                                            value: str):
    from memstrata.config import load_config

    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as exc:
        load_config()
    assert f"{var}: Input should be" in str(exc.value)
    assert f"(got '{value}')" in str(exc.value)


def test_problems_of_several_namespaces_are_reported_together(monkeypatch: pytest.MonkeyPatch):
    from memstrata.config import load_config

    monkeypatch.setenv("MEMSTRATA_STREAM_BATCH_MAX", "-5")
    monkeypatch.setenv("MEMSTRATA_RRF_K", "0")
    monkeypatch.setenv("MEMSTRATA_SERVICE_PROT", "1")
    with pytest.raises(ConfigError) as exc:
        load_config()
    text = str(exc.value)
    assert "MEMSTRATA_STREAM_BATCH_MAX:" in text and "MEMSTRATA_RRF_K:" in text
    assert "MEMSTRATA_SERVICE_PROT: not a memstrata setting" in text


def test_bad_keys_of_the_file_are_named_with_their_table(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path):
    from memstrata.config import load_config

    f = tmp_path / "bad.toml"
    f.write_text('rrf_k = 0\nnot_a_key = 1\n[stream]\nbatch_max = 0\nbatchmax = 3\n'
                 '[nosuch]\nx = 1\n')
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    with pytest.raises(ConfigError) as exc:
        load_config()
    text = str(exc.value)
    assert f"[stream] batch_max in {f}: Input should be greater than or equal to 1" in text
    assert f"[stream] batchmax in {f}: not a setting of MEMSTRATA_STREAM_*" in text
    assert f"rrf_k in {f}: Input should be greater than or equal to 1" in text
    assert f"not_a_key in {f}: Extra inputs are not permitted" in text
    assert f"[nosuch] in {f}: no settings namespace 'nosuch'" in text


def test_the_old_name_of_the_group_is_still_read(monkeypatch: pytest.MonkeyPatch):
    from memstrata.config import load_config, unknown_variables
    from memstrata.kafka import KafkaSettings

    monkeypatch.setenv("MEMSTRATA_STREAM_APP_ID", "old-group")
    assert unknown_variables({"MEMSTRATA_STREAM_APP_ID": "g"}) == []
    assert load_config().get(KafkaSettings).group == "old-group"
    monkeypatch.setenv("MEMSTRATA_KAFKA_GROUP", "new-group")
    assert load_config().get(KafkaSettings).group == "new-group"
    monkeypatch.delenv("MEMSTRATA_KAFKA_GROUP")
    monkeypatch.setenv("MEMSTRATA_STREAM_APP_ID", "bad group")
    with pytest.raises(ConfigError, match="MEMSTRATA_STREAM_APP_ID: String should match"):
        load_config()


def test_arguments_win_and_an_unregistered_class_is_refused(monkeypatch: pytest.MonkeyPatch):
    from pydantic_settings import BaseSettings, SettingsConfigDict

    from memstrata.config import load_config
    from query_service.settings import ServiceSettings

    monkeypatch.setenv("MEMSTRATA_SERVICE_PORT", "5000")
    config = load_config(namespaces={"service": {"port": 0}})
    assert config.get(ServiceSettings).port == 0
    assert config.sources["service"]["port"] == "argument"

    class Unregistered(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="MEMSTRATA_NOPE_")

    with pytest.raises(ConfigError, match="not a loaded settings namespace"):
        config.get(Unregistered)


def test_the_kafka_namespace_has_one_class_for_worker_service_and_produce(
        monkeypatch: pytest.MonkeyPatch):
    """Reproduction 3, settings side: the topic was refused as unknown before."""
    from memstrata.config import load_config, settings_namespaces, unknown_variables
    from memstrata.kafka import KafkaSettings

    monkeypatch.setenv("MEMSTRATA_KAFKA_TOPIC_TURNS", "x")
    assert unknown_variables() == []
    assert load_config().get(KafkaSettings).topic_turns == "x"
    owners = [cls for prefix, cls in settings_namespaces()[0].items()
              if prefix == "MEMSTRATA_KAFKA_"]
    assert owners == [KafkaSettings]
    import query_service.publish as publish
    import streams.settings as stream_settings

    assert not hasattr(stream_settings, "KafkaSettings")  # one owner, no re-export
    assert not [name for name in vars(publish) if name.endswith("Settings")
                and vars(publish)[name] is not KafkaSettings]


def test_memstrata_config_lists_every_namespace_with_its_source(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from typer.testing import CliRunner

    from memstrata.cli import _register_subcommands, app
    from memstrata.config import settings_namespaces

    _register_subcommands()
    f = tmp_path / "m.toml"
    f.write_text("[workers]\nmaterializers = 3\n")
    monkeypatch.setenv("MEMSTRATA_CONFIG_FILE", str(f))
    monkeypatch.setenv("MEMSTRATA_STREAM_BATCH_MAX", "9")
    out = CliRunner().invoke(app, ["config", "--sources", "--data-dir", str(tmp_path)]).output
    lines = set(out.splitlines())
    assert "MEMSTRATA_STREAM_BATCH_MAX=9  # env" in lines
    assert "MEMSTRATA_WORKERS_MATERIALIZERS=3  # file" in lines
    assert "MEMSTRATA_KAFKA_TOPIC_TURNS=memstrata.turns.v1  # default" in lines
    assert f"MEMSTRATA_DATA_DIR={tmp_path}  # argument" in lines
    for prefix, cls in settings_namespaces()[0].items():
        for name in cls.model_fields:
            assert any(line.startswith(f"{prefix}{name.upper()}=") for line in lines), name
    monkeypatch.setenv("MEMSTRATA_STREAM_BATCH_MAX", "-5")
    bad = CliRunner().invoke(app, ["config"])
    assert bad.exit_code == 2
    assert "MEMSTRATA_STREAM_BATCH_MAX: Input should be greater than or equal to 1" in bad.output


def test_no_library_code_reads_memstrata_variables_or_builds_settings_from_them():
    """Settings reach library code from an entry point's load_config, never from os.environ.

    Constructing a registered settings class reads the environment, so only the
    loader (memstrata/config.py) does it; library code takes instances, or
    ``defaults(cls)`` when its caller configured nothing.
    """
    import re

    from memstrata.config import Settings, settings_namespaces

    root = Path(__file__).resolve().parents[2]
    names = sorted({cls.__name__ for cls in settings_namespaces()[0].values()}
                   | {Settings.__name__})
    reads = re.compile(r"""(os\.environ(\.get)?\s*[\[(]\s*|getenv\(\s*)["']MEMSTRATA_""")
    builds = re.compile(r"(?<![\w.])(?<!class )(?:load_\w*settings|" + "|".join(names) + r")\(")
    found = []
    for package in ("memstrata", "streams", "query_service", "workers"):
        for path in sorted((root / package).rglob("*.py")):
            if path == root / "memstrata" / "config.py":
                continue
            text = path.read_text(encoding="utf-8")
            for pattern in (reads, builds):
                for m in pattern.finditer(text):
                    line_start = text.rfind("\n", 0, m.start()) + 1
                    line = text[line_start:text.find("\n", m.start())]
                    if line.lstrip().startswith(("def ", "#", "class ")):
                        continue
                    found.append(f"{path.relative_to(root)}: {line.strip()}")
    assert found == []
