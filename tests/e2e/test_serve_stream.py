"""``memstrata serve`` hosting the stream worker (the embedded default), as a real subprocess.

One serve for the module: its /metrics carries the worker's series beside the
service's, and an IngestBatch racing a DeleteUser through Kafka lands wholly
before or wholly after the delete.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from query_service.keys import add_key
from streams.broker import free_port
from streams.settings import BROKER_FILE
from tests.e2e.test_cli_serve import _wait_serving
from tests.support.atomic_batches import broken, race
from tests.support.serve_proc import stop_gracefully

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

#: Small stream batches, so one IngestBatch is stored in several pieces; fast commits.
FAST = {"MEMSTRATA_STREAM_BATCH_MAX": "2", "MEMSTRATA_STREAM_FRESHNESS_S": "0.5",
        "MEMSTRATA_KAFKA_COMMIT_INTERVAL_S": "0.2", "MEMSTRATA_KAFKA_SESSION_TIMEOUT_S": "6",
        "MEMSTRATA_KAFKA_HEARTBEAT_S": "0.5"}


@dataclass
class Serve:
    address: str
    metrics_url: str
    key: str
    data: Path
    proc: subprocess.Popen[str]

    def drained(self) -> None:
        from streams.worker import wait_drained

        brokers = json.loads((self.data / BROKER_FILE).read_text())["brokers"]
        assert asyncio.run(wait_drained(brokers, "memstrata-stream", 90)), "worker not drained"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    tmp = tmp_path_factory.mktemp("serve-stream")
    data = tmp / "data"
    data.mkdir()
    _, key = add_key(data / "service-keys.json", "acme")
    port, metrics_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env.update(FAST, MEMSTRATA_DATA_DIR=str(data), PYTHONPATH=str(ROOT))
    log = (tmp / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port),
                             "--metrics-port", str(metrics_port)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_serving(f"127.0.0.1:{port}", proc, timeout=120)
        yield Serve(f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics", key, data,
                    proc)
    finally:
        stop_gracefully(proc, 60)
        log.close()


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return str(reply.read().decode())


def _value(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + " ") or line.startswith(name + "{"))


def test_batches_are_atomic_with_respect_to_deletes_through_kafka(serve: Serve):
    outcome, present = race(serve.address, serve.key, "atom", batches=8,
                            settle=serve.drained)
    assert not outcome.errors, outcome.errors[:5]
    assert len(outcome.acked) == 9 and outcome.deletes > 0
    assert not broken(present), f"batches split by a delete (messages left of 6): " \
                                f"{broken(present)}"
    # Both outcomes happened: the race really raced.
    assert any(n == 6 for n in present.values()) and any(n == 0 for n in present.values()), \
        present


def test_stream_metrics_are_on_serves_metrics_port(serve: Serve):
    outcome, _ = race(serve.address, serve.key, "metered", batches=1, settle=serve.drained)
    assert len(outcome.acked) == 2
    text = _scrape(serve.metrics_url)
    assert "# TYPE memstrata_stream_dlq_events_total counter" in text
    assert _value(text, "memstrata_stream_turns_indexed_total") >= 6
    assert _value(text, "memstrata_stream_events_in_total") >= 12
    assert "memstrata_rpc_latency_seconds_bucket" in text  # the service's own, same port
