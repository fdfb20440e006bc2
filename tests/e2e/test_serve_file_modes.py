"""``memstrata serve`` on the embedded default keeps its data dir private.

A fresh data dir gets a key, then ``serve`` (broker, stream worker, stores and
gRPC in one process, started under the usual 022 umask) ingests a turn. While
it serves and after it stops, nothing under the data dir is open to group or
others: the stores, the broker's files, ``serve.json``, ``stream-broker.json``
and the keys file are 0600 and every folder 0700.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_cli import run
from tests.e2e.test_cli_serve import _free_port, _wait_serving
from tests.support.serve_proc import QUICK_JOIN
from tests.integration.test_data_dir_modes import open_to_others

pytestmark = pytest.mark.integration


def _ingest_one(address: str, key: str) -> None:
    from memstrata.client import MemoryClient
    from memstrata.model import Scope
    from memstrata.rpc import memory_pb2 as pb

    with MemoryClient(address, api_key=key) as client:
        reply = client.ingest([pb.TurnEvent(
            user_id="maya", session_id="2024-06-01-kayak", message_id="k1", role="user",
            content="My brother Tiago bought a red kayak called Gaivota.",
            session_date="2024-06-01")])
        assert reply.accepted == 1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if client.search(Scope(tenant_id="acme", user_id="maya"), "kayak Gaivota"):
                return
            time.sleep(0.3)
    raise AssertionError("the ingested turn never became searchable")


def test_serve_leaves_nothing_in_its_data_dir_readable_to_others(tmp_path: Path):
    data = tmp_path / "data"
    added = run("keys", "add", "acme", data_dir=data)
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "MEMSTRATA_DATA_DIR": str(data), "MEMSTRATA_STREAM_FRESHNESS_S": "0.5",
           **QUICK_JOIN}
    proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            umask=0o022)
    try:
        _wait_serving(address, proc)
        _ingest_one(address, key)
        names = {p.name for p in data.iterdir()}
        assert {"serve.json", "service-keys.json", "docs.sqlite3"} <= names, names
        assert open_to_others(data) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read() if proc.stderr else ""
    assert open_to_others(data) == []
