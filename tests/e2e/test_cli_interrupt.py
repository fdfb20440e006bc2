"""Ctrl-C during ``memstrata ingest``: it says what was committed, and re-running finishes.

A real subprocess gets a real SIGINT once the first batch of sessions is
committed (watched through SQLite, which a second process may read). The
interrupted run is the CLI under ``tests.support.paused_cli``: after its first
commit it waits for the signal, so a fast encoder or a busy machine cannot let
the ingest finish before the signal lands. The re-run is plain ``memstrata``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The paused ingest (tests.support.paused_cli) commits every BATCH_UNITS units (one unit
#: per session here; the plain CLI: 256) and waits for the signal after the first commit,
#: with 8 more sessions in progress and the rest not yet read.
BATCH_UNITS = 32
SESSIONS = 48


def write_sessions(path: Path) -> None:
    with path.open("w") as fh:
        for s in range(SESSIONS):
            for i, role in enumerate(("user", "assistant", "user", "assistant")):
                fh.write(json.dumps({
                    "tenant_id": "acme", "user_id": f"u{s % 7}", "session_id": f"s{s}",
                    "role": role, "message_id": f"s{s}#{i}",
                    "content": f"Session {s} message {i}: we talked about topic {s * 31 % 97}."
                }) + "\n")


def committed(docs: Path) -> int:
    try:
        with sqlite3.connect(f"file:{docs}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute(
                "SELECT COUNT(*) FROM sessions WHERE digest IS NOT NULL").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_ctrl_c_says_what_was_committed_and_a_rerun_finishes(tmp_path: Path):
    data = tmp_path / "big.jsonl"
    write_sessions(data)
    env = {**os.environ, "MEMSTRATA_DATA_DIR": str(tmp_path / "d")}
    cmd = [sys.executable, "-m", "memstrata", "ingest", str(data)]
    paused = [sys.executable, "-m", "tests.support.paused_cli", "ingest", str(data)]
    proc = subprocess.Popen(paused, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**env, "PAUSED_CLI_BATCH_UNITS": str(BATCH_UNITS)}, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while committed(tmp_path / "d" / "docs.sqlite3") == 0 and proc.poll() is None:
            assert time.monotonic() < deadline, "no batch was ever committed"
            time.sleep(0.05)
        assert proc.poll() is None, "the ingest finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    m = re.search(rf"interrupted: (\d+) of {SESSIONS} sessions are committed", err)
    assert m, err
    done = int(m.group(1))
    assert 0 < done < SESSIONS
    # The progress display agrees with the message: its committed bar stops at the same count.
    bars = re.findall(rf"committed\s.*?(\d+)/{SESSIONS}\s+sessions", err)
    assert bars and int(bars[-1]) == done, err
    assert "Run the same command again" in err
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    assert again.returncode == 0, again.stderr
    m = re.search(r"(\d+) ingested .* (\d+) unchanged", again.stdout)
    assert m, again.stdout
    ingested, unchanged = int(m.group(1)), int(m.group(2))
    assert unchanged >= done and ingested + unchanged == SESSIONS
