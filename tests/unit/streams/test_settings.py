"""Stream settings: the core accepts their namespaces; the broker file `up` writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memstrata.config import unknown_variables
from memstrata.kafka import BROKER_FILE, KafkaSettings, read_broker_file
from streams.settings import StreamSettings


def test_the_core_accepts_stream_and_kafka_variables_and_refuses_typos() -> None:
    env = {"MEMSTRATA_STREAM_FRESHNESS_S": "1", "MEMSTRATA_KAFKA_BROKERS": "h:1",
           "MEMSTRATA_STREAM_FRESHNES_S": "1"}
    assert unknown_variables(env) == ["MEMSTRATA_STREAM_FRESHNES_S"]


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTRATA_STREAM_FRESHNESS_S", "0.5")
    monkeypatch.setenv("MEMSTRATA_KAFKA_PARTITIONS", "12")
    assert StreamSettings().freshness_s == 0.5
    assert KafkaSettings().partitions == 12


def test_brokers_come_from_the_setting_else_from_a_running_up(tmp_path: Path) -> None:
    assert KafkaSettings(brokers="a:1").resolve_brokers(tmp_path) == "a:1"
    with pytest.raises(LookupError, match="memstrata up"):
        KafkaSettings().resolve_brokers(tmp_path)
    (tmp_path / BROKER_FILE).write_text(json.dumps({"brokers": "127.0.0.1:9", "pid": os.getpid()}))
    assert KafkaSettings().resolve_brokers(tmp_path) == "127.0.0.1:9"


def test_a_broker_file_left_by_a_dead_up_is_ignored(tmp_path: Path) -> None:
    (tmp_path / BROKER_FILE).write_text(json.dumps({"brokers": "127.0.0.1:9", "pid": 2**22 + 7}))
    assert read_broker_file(tmp_path) is None
