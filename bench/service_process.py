"""A query service in its own process for the load benches (``bench.service_load``,
``bench.noisy_neighbour``): started from any checkout, so a baseline tree can serve.

It runs ``python -m bench.service_load --serve ...`` in that tree; this module only
starts, probes and stops it, so the benches that use it need not import each other.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench._common import ROOT, cpu_seconds

__all__ = ["ServiceProcess"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServiceProcess:
    def __init__(self, data_dir: Path, keys: Path, read_threads: int,
                 answer_threads: int, *, tree: Path = ROOT,
                 env: dict[str, str] | None = None) -> None:
        """``tree``: the checkout whose code serves (another commit for a baseline)."""
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.service_load", "--serve", str(data_dir),
             str(self.port), str(keys), str(read_threads), str(answer_threads)],
            cwd=tree, env={**os.environ, **(env or {}), "PYTHONPATH": str(tree)})

    def cpu_s(self) -> float:
        """CPU seconds (user + system, all threads) the service process has used so far."""
        return cpu_seconds(self.proc.pid)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_healthy(self, timeout: float = 120) -> None:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        channel = grpc.insecure_channel(self.address)
        stub = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the service exited with {self.proc.returncode}")
                try:
                    if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == \
                            health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    time.sleep(0.2)
            raise RuntimeError("the service did not become healthy")
        finally:
            channel.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
