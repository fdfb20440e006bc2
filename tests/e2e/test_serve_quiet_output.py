"""``serve`` with the Ray backend starts and stops without native libraries' noise (issue 31).

Before: start-up printed gRPC's "Other threads are currently calling into gRPC,
skipping fork() handlers" once per child process Ray forked, and SIGTERM printed
Ray's native stack dump ("*** SIGTERM received at time=... PC: @ ... epoll_wait").
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.serve_proc import QUICK_JOIN, wait_serving
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

NOISE = ("skipping fork() handlers", "fork_posix", "SIGTERM received at time",
         "AlreadyConfiguredWarning", "Traceback")


def test_serve_with_ray_starts_and_stops_without_fork_warnings_or_stack_dumps(tmp_path: Path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from streams.broker import free_port

    port = free_port()
    ray_tmp = tempfile.mkdtemp(prefix="msq")  # short (Ray's socket paths) and its own cluster
    log = tmp_path / "serve.log"
    env = {**os.environ, "MEMSTRATA_DATA_DIR": str(tmp_path / "data"),
           "MEMSTRATA_WORKERS_BACKEND": "ray", "RAY_TMPDIR": ray_tmp, **QUICK_JOIN}
    for name in ("GRPC_ENABLE_FORK_SUPPORT", "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"):
        env.pop(name, None)  # the command sets its own defaults
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port)],
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            wait_serving(f"127.0.0.1:{port}", 240, lambda: (
                f"serve exited: {log.read_text(errors='replace')[-3000:]}"
                if proc.poll() is not None else None))
            wait_for(lambda: "serving memstrata" in log.read_text(errors="replace"), 120,
                     "the serving banner")  # the workers started too
            proc.send_signal(signal.SIGTERM)
            proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
            shutil.rmtree(ray_tmp, ignore_errors=True)
    text = log.read_text(errors="replace")
    assert "serving memstrata.v1.MemoryService" in text, text[-3000:]
    assert not [n for n in NOISE if n in text], text[-4000:]
