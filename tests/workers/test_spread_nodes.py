"""Several Ray nodes: a rollout batch spread over two worker nodes survives losing one.

``ray.cluster_utils.Cluster`` runs a head and two worker nodes as separate
raylets on this machine (about 6 s to start). It cannot share a process with
the suite's single-node Ray, so this module shuts that one down first (it
sorts last among the worker tests).

The partition test cuts a node off instead of stopping it: one worker node
runs in its own network namespace, joined to the others by a veth pair on a
private /30 that exists only on this machine, and the host end of the pair is
taken down mid-batch (a blackhole route keeps the /30 off the default route
meanwhile). The head's health checks are tightened (RAY_health_check_*) so the
silent node is declared dead in about 2 s. The batch's driver is a process of
its own (``partition_driver``). It needs root and ``ip netns``, and skips
without them.
"""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.executor import RolloutRequest
from streams.broker import free_port, wait_for_port
from tests.workers.conftest import ROOT, ray_env
from workers.metrics import WorkersMetrics
from workers.readers import serve_memory
from workers.rollout import RayRolloutExecutor
from workers.settings import WorkersSettings

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture  # per test: the partition test below runs its own cluster
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    ray.shutdown()
    ray_env()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0,
                                                       "include_dashboard": False})
    nodes = [c.add_node(num_cpus=1) for _ in range(2)]
    try:
        ray.init(address=c.address, namespace="memstrata-tests", log_to_driver=False)
        c.wait_for_nodes()
        yield c, nodes
    finally:
        ray.shutdown()
        c.shutdown()


def test_batch_spread_over_two_nodes_completes_when_one_is_removed(cluster, memory, dataset):
    c, nodes = cluster
    csettings = ControllerSettings(policy="rules")
    questions = dataset.questions * 4
    local = Controller(memory, csettings)
    expected = [local.answer(q.scope, q.question, q.asked_on).answer for q in questions]
    settings = WorkersSettings(backend="ray", rollout_actors=4, rollout_num_cpus=0.25,
                               max_restarts=3, max_task_retries=3, placement="spread")
    metrics = WorkersMetrics()
    with serve_memory(memory, dataset.questions[0].scope.tenant_id) as reader:
        pool = RayRolloutExecutor(settings, reader, controller_settings=csettings,
                                  app_settings=memory.settings, metrics=metrics)
        try:
            placed = pool.ready()
            assert len(set(placed)) == 2  # spread over both worker nodes
            victim = nodes[0]
            started = threading.Event()
            seen: list[int] = []

            def progress(done: int, total: int) -> None:
                seen.append(done)
                if done >= 8:
                    started.set()

            out: list[Any] = []
            runner = threading.Thread(target=lambda: out.extend(pool.answer_many(
                [RolloutRequest(q.scope, q.question, q.asked_on) for q in questions],
                progress=progress)))
            runner.start()
            assert started.wait(180)
            c.remove_node(victim)  # its actors restart on the other node; tasks are retried
            runner.join(300)
            assert not runner.is_alive()
        finally:
            pool.close()
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors[:3]
    assert [o.answer for o in out] == expected
    assert seen == list(range(1, len(questions) + 1))  # every question answered once
    answered_on = set(pool.last_nodes)
    assert victim.node_id in answered_on and len(answered_on) == 2
    assert metrics.actor_restarts.labels(pool="rollout")._value.get() >= 1


def _ip(*args: str, ns: str | None = None, check: bool = True,
        ) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=15)


@dataclass
class Partitionable:
    """A head and a worker node in this namespace, a worker node in namespace ``ns``."""

    ns: str
    host_if: str
    host_ip: str
    ns_ip: str
    subnet: str
    temp_dir: str
    address: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, args: list[str], env: dict[str, str], log: str,
              ns: str | None = None) -> subprocess.Popen[bytes]:
        ray_bin = str(Path(sys.executable).with_name("ray"))
        cmd = [ray_bin, "start", "--block", "--disable-usage-stats",
               "--object-store-memory", str(80 * 2**20), *args]
        if ns is not None:
            cmd = ["ip", "netns", "exec", ns, *cmd]
        with open(Path(self.temp_dir) / log, "wb") as out:
            # A session of its own: a Ctrl-C meant for pytest leaves it to the teardown.
            p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self.procs.append(p)
        return p

    def wait_started(self, proc: subprocess.Popen[bytes], log: str, timeout_s: float) -> None:
        """Until ``ray start`` says the node is up (nodes sharing a session dir start one
        at a time: two at once may pick the same socket file name)."""
        deadline = time.monotonic() + timeout_s
        while "Ray runtime started" not in (Path(self.temp_dir) / log).read_text(
                errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, self.logs()
            time.sleep(0.2)

    def logs(self) -> str:
        """The tail of each ``ray start`` log, for a failure message."""
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}"
                         for f in sorted(Path(self.temp_dir).glob("*.log")))

    def kill_all(self) -> None:
        """SIGKILL every process this cluster started, and wait until they are gone.

        Ray workers take their own process group and rename themselves, so they are
        found as descendants of the ``ray start`` processes, as members of the
        namespace, and (orphans) by the temp dir on their command line.
        """
        doomed: set[int] = set()
        for _ in range(3):
            found = _descendants({p.pid for p in self.procs}) | _netns_pids(self.ns) | \
                _mentioning(self.temp_dir)
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            doomed |= found
            for p in self.procs:
                if p.poll() is None:
                    p.wait(10)
            if not found - {p.pid for p in self.procs}:
                break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_running(pid) for pid in doomed):
            time.sleep(0.1)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _descendants(roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


def _netns_pids(ns: str) -> set[int]:
    r = _ip("netns", "pids", ns, check=False)
    return {int(x) for x in r.stdout.split()} if r.returncode == 0 else set()


def _mentioning(text: str) -> set[int]:
    me, out = os.getpid(), set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != me:
            try:
                if text.encode() in (d / "cmdline").read_bytes():
                    out.add(int(d.name))
            except OSError:
                continue
    return out


def _free_subnet() -> tuple[str, str, str]:
    """A /30 in 10.251.0.0/16 that no address or route on this machine uses yet."""
    used = _ip("-o", "addr").stdout + _ip("route", "show", "table", "all").stdout
    for _ in range(50):
        a, b = random.randrange(256), random.randrange(0, 256, 4)
        base = f"10.251.{a}."
        if base + str(b) + "/" not in used and \
                not any(f"{base}{b + i}" in used for i in range(4)):
            return f"{base}{b}/30", f"{base}{b + 1}", f"{base}{b + 2}"
    pytest.skip("no free /30 in 10.251.0.0/16 for the partition's veth pair")


@pytest.fixture
def partitionable() -> Iterator[Partitionable]:
    if os.geteuid() != 0:
        pytest.skip("a network partition needs root (ip netns, veth)")
    if shutil.which("ip") is None:
        pytest.skip("a network partition needs the `ip` tool (iproute2)")
    tag = f"{os.getpid() % 100000}{random.randrange(100)}"
    ns, host_if, ns_if = f"mstr-part-{tag}", f"msp{tag}h", f"msp{tag}n"
    made = _ip("netns", "add", ns, check=False)
    if made.returncode != 0:
        pytest.skip(f"`ip netns add` was refused: {made.stderr.strip()}")
    subnet = ""
    temp_dir = tempfile.mkdtemp(prefix="msray")  # short: Ray's socket paths live under it
    part: Partitionable | None = None
    try:
        subnet, host_ip, ns_ip = _free_subnet()
        _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        _ip("link", "set", ns_if, "netns", ns)
        _ip("addr", "add", f"{host_ip}/30", "dev", host_if)
        # Once the host end is down, packets for the /30 are dropped here rather than
        # following the default route off this machine.
        _ip("route", "add", "blackhole", subnet, "metric", "4242")
        _ip("link", "set", host_if, "up")
        _ip("addr", "add", f"{ns_ip}/30", "dev", ns_if, ns=ns)
        _ip("link", "set", ns_if, "up", ns=ns)
        _ip("link", "set", "lo", "up", ns=ns)
        part = Partitionable(ns, host_if, host_ip, ns_ip, subnet, temp_dir)
        yield part
    finally:
        try:
            if part is not None:
                part.kill_all()
        finally:
            _ip("link", "del", host_if, check=False)
            if subnet:
                _ip("route", "del", "blackhole", subnet, "metric", "4242", check=False)
            _ip("netns", "del", ns, check=False)
            shutil.rmtree(temp_dir, ignore_errors=True)


def test_partitioned_node(partitionable, memory, dataset):
    """The far node is cut off mid-batch but keeps running: the head's fast health
    checks declare it dead, its actors restart on the near node, and the batch ends
    with every question answered once."""
    part = partitionable
    ray.shutdown()
    ray_env()
    env = dict(os.environ)
    # Notice a silent node within about 2 s (the default is about 30 s).
    env.update(RAY_health_check_initial_delay_ms="0", RAY_health_check_period_ms="500",
               RAY_health_check_timeout_ms="500", RAY_health_check_failure_threshold="3",
               # A private cluster on a /30 of this machine; the driver here sends no token.
               RAY_AUTH_MODE="disabled")
    port = free_port(part.host_ip)
    part.address = f"{part.host_ip}:{port}"
    head = part.start(["--head", "--node-ip-address", part.host_ip, "--port", str(port),
                       "--num-cpus", "0", "--include-dashboard", "false",
                       "--ray-client-server-port", str(free_port(part.host_ip)),
                       "--temp-dir", part.temp_dir], env, "head.log")
    wait_for_port(part.host_ip, port, 60, head)
    near = part.start(["--address", part.address, "--node-ip-address", part.host_ip,
                       "--num-cpus", "1"], env, "near.log")
    part.wait_started(near, "near.log", 60)
    part.start(["--address", part.address, "--node-ip-address", part.ns_ip,
                "--num-cpus", "1"], env, "far.log", ns=part.ns)
    ray.init(address=part.address, _node_ip_address=part.host_ip,
             namespace="memstrata-tests", log_to_driver=False)
    try:
        deadline = time.monotonic() + 60
        while len([n for n in ray.nodes() if n["Alive"]]) < 3:
            assert time.monotonic() < deadline, f"{ray.nodes()}\n{part.logs()}"
            time.sleep(0.2)
        far = next(n["NodeID"] for n in ray.nodes()
                   if n["Alive"] and n["NodeManagerAddress"] == part.ns_ip)
    finally:
        ray.shutdown()  # the batch runs in a driver process of its own
    repeat = 4
    questions = dataset.questions * repeat
    local = Controller(memory, ControllerSettings(policy="rules"))
    expected = [local.answer(q.scope, q.question, q.asked_on).answer for q in questions]
    # The actors in the namespace reach memory over the veth pair, not loopback.
    with serve_memory(memory, dataset.questions[0].scope.tenant_id,
                      host=part.host_ip) as reader:
        cfg = {"address": part.address, "node_ip": part.host_ip, "reader": reader.address,
               "keys": reader.tenant_keys, "repeat": repeat,
               "data_dir": str(memory.settings.data_dir)}
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.workers.partition_driver", json.dumps(cfg)],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        part.procs.append(driver)  # type: ignore[arg-type]
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in driver.stdout or ()],
                         daemon=True).start()
        log: list[str] = []

        def until(prefix: str, timeout_s: float) -> str:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise AssertionError(f"no {prefix!r} from the driver in {timeout_s:g} s:"
                                         f"\n{''.join(log[-40:])}\n{part.logs()}") from None
                log.append(line)
                if line.startswith(prefix):
                    return line

        until("started", 90)
        _ip("link", "set", part.host_if, "down")  # the far node is cut off, alive
        cut = time.monotonic()
        result = json.loads(until("result ", 60).removeprefix("result "))
        print(f"the batch finished {time.monotonic() - cut:.1f} s after the partition")
        driver.wait(30)
    assert far in result["placed"] and len(set(result["placed"])) == 2  # both worker nodes
    assert not result["errors"], result["errors"]
    assert result["answers"] == expected
    assert result["seen"] == list(range(1, len(questions) + 1))  # every one answered once
    answered_on = set(result["nodes"])
    assert far in answered_on and len(answered_on) == 2
    assert result["alive"][far] is False  # declared dead by the head's health checks
    assert result["restarts"] >= 1
