"""A real ``memstrata serve`` subprocess for crash tests and ``bench/chaos_ingest.py``.

Starts the CLI as a user does, waits until gRPC health says SERVING, finds its
tansu child through ``/proc``, and counts which message ids a user's memory
holds (through the service, over the public client).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from streams.broker import _die_with_parent, free_port


#: The stream tests' group timings (tests/integration/streams/harness.py FAST) for a
#: ``serve`` under test: its embedded worker joins its consumer group in about half the
#: session timeout, and ``serve`` is SERVING once it has (8.5 s to SERVING here with
#: these, 11 s with the 10 s default).
QUICK_JOIN = {"MEMSTRATA_KAFKA_SESSION_TIMEOUT_S": "6", "MEMSTRATA_KAFKA_HEARTBEAT_S": "0.5"}

#: Channel options for a poll that waits for a server still starting (see ``wait_serving``).
FAST_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 100),
                  ("grpc.min_reconnect_backoff_ms", 100),
                  ("grpc.max_reconnect_backoff_ms", 200)]


def wait_serving(address: str, timeout_s: float, why_not: Callable[[], str | None],
                 step_s: float = 0.1) -> None:
    """Poll gRPC health at ``address`` until SERVING (RuntimeError after ``timeout_s``).

    ``why_not()`` is asked before each poll and at the end: a string (e.g. "serve
    exited with 1: <log>") ends the wait at once with that message.

    The channel retries a refused connection every 0.1-0.2 s: with gRPC's default
    backoff (1 s, growing 1.6x a try) the polls made while ``serve`` starts (several
    seconds) spaced the attempts out, and SERVING was seen up to 4 s late.
    """
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(address, options=FAST_RECONNECT) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            reason = why_not()
            if reason:
                raise RuntimeError(reason)
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(step_s)
    raise RuntimeError(f"no SERVING health at {address} after {timeout_s:.0f} s"
                       f"{': ' + (why_not() or '') if why_not() else ''}")


def stop_gracefully(proc: subprocess.Popen[Any], grace_s: float = 30) -> None:
    """SIGTERM, wait ``grace_s``, then SIGKILL: a process a test started never outlives it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def add_key(data_dir: Path, tenant: str) -> str:
    """A new API key for ``tenant`` in the data dir's keys file (as ``memstrata keys add``)."""
    from memstrata.cli.access import DEFAULT_KEYS_FILE
    from query_service.keys import add_key as add

    return add(data_dir / DEFAULT_KEYS_FILE, tenant)[1]


class ServeProcess:
    """``python -m memstrata serve`` on a free port over ``data_dir``; output to a log file."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log_path = data_dir / f"serve-{self.port}.log"
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memstrata", "serve", "--port", str(self.port)],
            env={**os.environ, "MEMSTRATA_DATA_DIR": str(data_dir), **(env or {})},
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            preexec_fn=_die_with_parent())  # a killed test run takes its servers with it

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def wait_serving(self, timeout_s: float = 120.0) -> None:
        def exited() -> str | None:
            if self.proc.poll() is not None:
                return f"serve exited with {self.proc.returncode}:\n{self.log()}"
            return None

        wait_serving(self.address, timeout_s, exited)

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._log.close()

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def tansu_children(pid: int) -> list[int]:
    """Live tansu processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] != "Z" and int(fields[1]) == pid and b"tansu" in cmd:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] not in ("Z", "X")


def wait_gone(pids: Iterable[int], timeout_s: float = 10.0) -> list[int]:
    """The pids still alive after waiting up to ``timeout_s`` for them to end."""
    deadline = time.monotonic() + timeout_s
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def stored_message_ids(client: Any, scope: Any) -> set[str]:
    """Every message id the user's memory holds (raw turns, read through ``client``)."""
    from memstrata.client import RemoteSessionNotFound

    ids: set[str] = set()
    try:
        metas = client.sessions(scope)
    except (RemoteSessionNotFound, LookupError):
        return ids
    except Exception as exc:
        if "NOT_FOUND" in str(exc) or "no memory" in str(exc):
            return ids
        raise
    for meta in metas:
        for turn in client.raw(scope, meta.session_id):
            ids.update(m.source_id for m in turn.messages if m.source_id)
    return ids


def batch(user: str, session: str, ids: Sequence[str], text: str = "") -> list[Any]:
    """Turn events for ``ids`` (alternating user / assistant) in one session."""
    from memstrata.rpc import memory_pb2 as pb

    return [pb.TurnEvent(user_id=user, session_id=session, message_id=mid,
                         role="user" if i % 2 == 0 else "assistant",
                         content=f"{text or 'Note'} {mid}: the kayak trip plan number {i}.",
                         session_date="2024-06-01")
            for i, mid in enumerate(ids)]
