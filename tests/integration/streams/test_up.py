"""``memstrata up`` then ``memstrata produce``, as a new user runs them, then Ctrl-C.

``up`` starts its own broker (not the session one), records its address in the
data dir so ``produce`` needs no flags, drains its topics on SIGINT and stops
the broker; the conversations are then in the embedded stores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.kafka import BROKER_FILE
from tests.integration.streams.harness import ROOT, wait_until

pytestmark = pytest.mark.integration


def test_up_then_produce_then_ctrl_c(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTRATA_")}
    env.update(PYTHONPATH=str(ROOT), MEMSTRATA_DATA_DIR=str(data))
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen([sys.executable, "-m", "memstrata", "up"], cwd=ROOT, env=env,
                          stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: (data / BROKER_FILE).is_file() or up.poll() is not None, 60)
        assert up.poll() is None, (tmp_path / "up.log").read_text()
        info = json.loads((data / BROKER_FILE).read_text())
        assert info["pid"] == up.pid and info["brokers"].startswith("127.0.0.1:")
        produced = subprocess.run(
            [sys.executable, "-m", "memstrata", "produce", "examples/sample_turns.jsonl"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert produced.returncode == 0, produced.stderr
        assert "21 messages in 5 sessions" in produced.stdout
        up.send_signal(signal.SIGINT)  # Ctrl-C: drain, then stop
        assert up.wait(90) == 0, (tmp_path / "up.log").read_text()
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(10)
        log.close()
    out = (tmp_path / "up.log").read_text()
    assert f"embedded broker at {info['brokers']}" in out
    assert not (data / BROKER_FILE).exists()
    assert _broker_processes(info) == []  # the broker stopped with it
    with Memory.open(Settings(data_dir=data)) as memory:
        maya = Scope(tenant_id="acme", user_id="maya")
        assert [m.session_id for m in memory.sessions(maya)] == [
            "2024-03-02-trip", "2024-04-10-running", "2024-05-20-after-trip"]
        assert memory.stats("acme").turns == 9 and memory.stats("globex").sessions == 1
        hits = memory.search(maya, "Lisbon trip with my sister")
        assert hits and hits[0].session_id == "2024-03-02-trip"


def _broker_processes(info: dict[str, object]) -> list[int]:
    """Live tansu processes listening on the address ``up`` recorded."""
    port = str(info["brokers"]).rsplit(":", 1)[1]
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "tansu" in cmd and f":{port} " in cmd + " ":
                found.append(int(proc.name))
    return found
