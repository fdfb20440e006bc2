"""The Faust, mode and aiokafka surfaces the worker relies on exist in the installed versions.

An upgrade that removes or renames one fails here, naming the attribute and the
version, instead of in a running worker. The worker's own modules read no
private name of those libraries (checked on their source).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("faust", reason="the kafka extra provides Faust")

from streams import faust_compat

ROOT = Path(__file__).resolve().parents[3]


def test_every_surface_the_worker_uses_exists() -> None:
    lacking = faust_compat.missing()
    assert not lacking, "\n".join(lacking)


def test_a_missing_surface_is_named_with_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faust_compat, "SURFACES", (
        ("faust-streaming", "faust.streams", "Stream.no_such_method", "a test"),))
    (line,) = faust_compat.missing()
    assert "faust.streams.Stream.no_such_method" in line
    assert re.search(r"faust-streaming \d+\.\d+", line), line


def test_the_read_offset_sensor_records_the_last_offset_per_partition() -> None:
    from faust.types import TP

    sensor = faust_compat.ReadOffsets()
    sensor.on_message_in(TP("memstrata.turns.v1", 2), 41, None)
    sensor.on_message_in(TP("memstrata.turns.v1", 2), 42, None)
    assert sensor.read == {("memstrata.turns.v1", 2): 42}


#: Private names of Faust, mode or aiokafka objects the services once read.
_REACH_INS = re.compile(r"\._(read_offset|stop_on_signal|schedule_shutdown|signal_stop_time|"
                        r"partitioner|starting_fut)\b")


def test_the_services_read_no_private_name_of_faust_mode_or_aiokafka() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for pkg in ("streams", "query_service", "memstrata")
             for path in sorted((ROOT / pkg).rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _REACH_INS.search(line)]
    assert not found, "\n".join(found)
