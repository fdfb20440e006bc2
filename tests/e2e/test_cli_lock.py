"""Two processes on one embedded data dir (issue 9 item 1), through the real command.

A second process holds the data dir for writing, as a long ingest would; the
command under test must then say which data dir, which process and what to do
(never a backend's raw lock error). Commands that only read open read-only;
with the default stores they still wait, because Qdrant Edge locks its files
even to read, and the message says so and names the way out (a Qdrant server).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import SAMPLE, run

HOLDER = """
import sys
from memstrata.config import load_settings
from memstrata.memory import Memory
with Memory.open(load_settings()):
    print("holding", flush=True)
    sys.stdin.readline()
"""


def _hold(data: Path) -> subprocess.Popen:
    """Another process with the data dir open for writing, until a line arrives on its stdin."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "MEMSTRATA_DATA_DIR": str(data)})


def _wait_holding(holder: subprocess.Popen) -> None:
    assert holder.stdout is not None
    if holder.stdout.readline().strip() != "holding":
        holder.wait(timeout=60)
        why = holder.stderr.read() if holder.stderr else ""
        pytest.fail(f"the holder did not open memory: {why}")


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory, sample_copy: Callable[[Path], Path],
         ) -> Iterator[tuple[Path, subprocess.Popen]]:
    """A data dir with the sample ingested, held open for writing by another process."""
    data = sample_copy(tmp_path_factory.mktemp("held") / "data")
    holder = _hold(data)
    try:
        _wait_holding(holder)
        yield data, holder
    finally:
        holder.communicate("\n", timeout=60)  # the holder closes its stores and exits


def test_ingest_while_another_process_writes_says_where_who_and_what_to_do(held):
    data, holder = held
    r = run("ingest", str(SAMPLE), data_dir=data)
    assert r.returncode == 3
    assert f"the data dir {data} is in use by process {holder.pid} on " in r.stderr
    assert "What to do: wait for it to finish" in r.stderr
    assert "MEMSTRATA_VECTOR_BACKEND=qdrant" in r.stderr
    assert "LockBusy" not in r.stderr and "WouldBlock" not in r.stderr
    assert "ingested" not in r.stdout


def test_eval_qa_on_a_held_data_dir_says_the_same(held, tmp_path: Path):
    data, _ = held
    mini = Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval_mini.json"
    r = run("eval", "qa", "--dataset", str(mini), "--format", "longmemeval", "--data-dir",
            str(data), "--output", str(tmp_path / "qa.json"), data_dir=data)
    assert r.returncode == 3
    assert f"the data dir {data} is in use by" in r.stderr
    assert "LockBusy" not in r.stderr and "WouldBlock" not in r.stderr


def test_search_while_another_process_writes_says_why_it_waits(held):
    data, holder = held
    for command in (["search", "--tenant", "acme", "--user", "maya", "knee"],
                    ["sessions", "--tenant", "acme", "--user", "maya"]):
        r = run(*command, data_dir=data)
        assert r.returncode == 3, r.stdout
        assert f"the data dir {data} is in use by process {holder.pid}" in r.stderr
        assert "this command only reads" in r.stderr and "Qdrant Edge" in r.stderr
        assert "MEMSTRATA_VECTOR_BACKEND=qdrant" in r.stderr


def test_the_lock_names_the_command_as_typed(tmp_path: Path):
    """A CLI process holding the data dir is named as `memstrata <command>`, not __main__.py."""
    data = tmp_path / "data"
    with (tmp_path / "slow.jsonl").open("w") as fh:  # long enough to still run when checked
        for n in range(400):
            fh.write(_turn(n))
    ingest = subprocess.Popen(
        [sys.executable, "-m", "memstrata", "ingest", str(tmp_path / "slow.jsonl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "MEMSTRATA_DATA_DIR": str(data)})
    try:
        lock = data / "writer.lock"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (lock.exists() and lock.read_text()):
            time.sleep(0.1)
        holder = json.loads(lock.read_text())
        assert holder["pid"] == ingest.pid
        assert holder["command"] == f"memstrata ingest {tmp_path / 'slow.jsonl'}"
    finally:
        ingest.kill()
        ingest.wait(timeout=60)


def _turn(n: int) -> str:
    return json.dumps({"tenant_id": "t", "user_id": "u", "session_id": f"s{n // 20}",
                       "role": "user" if n % 2 == 0 else "assistant",
                       "content": f"message {n} about the garden and the bees",
                       "message_id": f"m{n}"}) + "\n"
