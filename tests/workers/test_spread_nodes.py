"""Several Ray nodes: a rollout batch spread over two worker nodes survives losing one.

One ``ray.cluster_utils.Cluster`` per module (a head and two worker nodes as
separate raylets on this machine) serves both tests. It cannot share a process
with the suite's single-node Ray, so the module shuts that one down first (it
sorts last among the worker tests).

The removal test stops one worker node mid-batch. The partition test cuts a
node off instead of stopping it: a third worker node runs in its own network
namespace, joined to the others by a veth pair on a private /30 that exists
only on this machine (the head and the near node listen on the host end of
the pair), and the host end is taken down mid-batch (a blackhole route keeps
the /30 off the default route meanwhile). The head's health checks are
tightened (RAY_health_check_*) so the silent node is declared dead in a few
seconds. Each batch's driver is a process of its own (``partition_driver``): in
the test process, after the suite's single-node Ray, a driver on the cluster's
address lost its actors at creation.
The partition needs root and ``ip netns``, and skips without them; the
removal test then runs on loopback.

In both tests the batch's progress callback waits until the node is gone or
cut off, so the fault always lands mid-batch however fast the answers come.
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
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from tests.workers.conftest import ROOT, ray_env
from workers.readers import serve_memory

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


#: The head notices a silent node within about 2 s (the default is about 30 s).
FAST_HEALTH = {"RAY_health_check_initial_delay_ms": "0", "RAY_health_check_period_ms": "500",
               "RAY_health_check_timeout_ms": "500", "RAY_health_check_failure_threshold": "3",
               # A private cluster on this machine; its drivers send no token.
               "RAY_AUTH_MODE": "disabled"}


def _ip(*args: str, ns: str | None = None, check: bool = True,
        ) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=15)


@dataclass
class Net:
    """Namespace ``ns``, reached from this one over a veth pair (``host_if`` here)."""

    ns: str
    host_if: str
    host_ip: str
    ns_ip: str


@dataclass
class Shared:
    """The module's cluster: a head and two worker nodes listening on ``ip``."""

    cluster: Any
    near: Any
    other: Any
    ip: str
    temp_dir: str
    net: Net | None
    why_no_net: str
    #: Processes started outside the Cluster (the far node, the partition's driver).
    procs: list[subprocess.Popen[Any]] = field(default_factory=list)

    def start_far(self, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """A worker node in the namespace that joins this cluster, started the way an
        operator starts one (``memstrata workers node``; the last option goes through
        to ``ray start``)."""
        assert self.net is not None
        cli = str(Path(sys.executable).with_name("memstrata"))
        cmd = ["ip", "netns", "exec", self.net.ns, cli, "workers", "node",
               "--address", self.cluster.address, "--node-ip-address", self.net.ns_ip,
               "--num-cpus", "1", f"--object-store-memory={80 * 2**20}"]
        with open(Path(self.temp_dir) / "far.log", "wb") as out:
            # A session of its own: a Ctrl-C meant for pytest leaves it to the teardown.
            p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self.procs.append(p)
        return p

    def logs(self) -> str:
        """The tail of the far node's log, for a failure message."""
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}"
                         for f in sorted(Path(self.temp_dir).glob("*.log")))

    def kill_all(self) -> None:
        """SIGKILL every process left of this cluster, and wait until they are gone.

        Ray workers take their own process group and rename themselves, so they are
        found as descendants of the processes started here, as members of the
        namespace, and (orphans) by the cluster's temp dir on their command line.
        """
        doomed: set[int] = set()
        for _ in range(3):
            found = _descendants({p.pid for p in self.procs}) | _mentioning(self.temp_dir) | \
                (_netns_pids(self.net.ns) if self.net is not None else set())
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


def _free_subnet() -> tuple[str, str, str] | None:
    """A /30 in 10.251.0.0/16 that no address or route on this machine uses yet."""
    used = _ip("-o", "addr").stdout + _ip("route", "show", "table", "all").stdout
    for _ in range(50):
        a, b = random.randrange(256), random.randrange(0, 256, 4)
        base = f"10.251.{a}."
        if base + str(b) + "/" not in used and \
                not any(f"{base}{b + i}" in used for i in range(4)):
            return f"{base}{b}/30", f"{base}{b + 1}", f"{base}{b + 2}"
    return None


def _make_net(stack: ExitStack) -> tuple[Net | None, str]:
    """The namespace and its veth pair (removed by ``stack``), or None and why not."""
    if os.geteuid() != 0:
        return None, "a network partition needs root (ip netns, veth)"
    if shutil.which("ip") is None:
        return None, "a network partition needs the `ip` tool (iproute2)"
    tag = f"{os.getpid() % 100000}{random.randrange(100)}"
    ns, host_if, ns_if = f"mstr-part-{tag}", f"msp{tag}h", f"msp{tag}n"
    made = _ip("netns", "add", ns, check=False)
    if made.returncode != 0:
        return None, f"`ip netns add` was refused: {made.stderr.strip()}"
    stack.callback(_ip, "netns", "del", ns, check=False)
    free = _free_subnet()
    if free is None:
        return None, "no free /30 in 10.251.0.0/16 for the partition's veth pair"
    subnet, host_ip, ns_ip = free
    _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
    stack.callback(_ip, "link", "del", host_if, check=False)
    _ip("link", "set", ns_if, "netns", ns)
    _ip("addr", "add", f"{host_ip}/30", "dev", host_if)
    # Once the host end is down, packets for the /30 are dropped here rather than
    # following the default route off this machine.
    _ip("route", "add", "blackhole", subnet, "metric", "4242")
    stack.callback(_ip, "route", "del", "blackhole", subnet, "metric", "4242", check=False)
    _ip("link", "set", host_if, "up")
    _ip("addr", "add", f"{ns_ip}/30", "dev", ns_if, ns=ns)
    _ip("link", "set", ns_if, "up", ns=ns)
    _ip("link", "set", "lo", "up", ns=ns)
    return Net(ns, host_if, host_ip, ns_ip), ""


def _restore_env(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    from ray._private.utils import get_ray_address_file
    from ray.cluster_utils import Cluster

    with ExitStack() as stack:
        net, why = _make_net(stack)
        # With the partition's plumbing the head and the near node listen on the host end
        # of the veth pair, so the node in the namespace can reach them.
        ip = net.host_ip if net is not None else "127.0.0.1"
        temp_dir = tempfile.mkdtemp(prefix="msray")  # short: Ray's socket paths live under it
        stack.callback(shutil.rmtree, temp_dir, ignore_errors=True)
        stack.callback(_restore_env, {k: os.environ.get(k) for k in FAST_HEALTH})
        os.environ.update(FAST_HEALTH)
        ray.shutdown()
        ray_env()
        sh = Shared(None, None, None, ip, temp_dir, net, why)
        stack.callback(sh.kill_all)  # runs last: whatever the Cluster's shutdown left
        # Cluster() records the head's address under Ray's default temp dir (not the
        # node's), which a fresh machine has only once some Ray process made it.
        Path(get_ray_address_file(None)).parent.mkdir(parents=True, exist_ok=True)
        c = Cluster(initialize_head=True, shutdown_at_exit=False,
                    head_node_args={"num_cpus": 0, "include_dashboard": False,
                                    "node_ip_address": ip, "temp_dir": temp_dir})
        stack.callback(c.shutdown)
        sh.cluster = c
        sh.near, sh.other = (c.add_node(num_cpus=1, node_ip_address=ip, temp_dir=temp_dir)
                             for _ in range(2))
        c.wait_for_nodes()
        yield sh


def _drive(shared: Shared, memory: Any, dataset: Any, fault: Any, host: str,
           repeat: int = 2) -> tuple[dict[str, Any], list[str]]:
    """Run a batch in a driver process of its own (``partition_driver``); ``fault()`` runs
    while the driver holds the batch after 8 answers. Returns the driver's result and
    the answers the in-process controller gives."""
    questions = dataset.questions * repeat
    local = Controller(memory, ControllerSettings(policy="rules"))
    expected = [local.answer(q.scope, q.question, q.asked_on).answer for q in questions]
    with serve_memory(memory, dataset.questions[0].scope.tenant_id, host=host) as reader:
        cfg = {"address": shared.cluster.address, "node_ip": shared.ip,
               "reader": reader.address, "keys": reader.tenant_keys, "repeat": repeat,
               "data_dir": str(memory.settings.data_dir)}
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.workers.partition_driver", json.dumps(cfg)],
            env=dict(os.environ), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        shared.procs.append(driver)
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
                                         f"\n{''.join(log[-40:])}\n{shared.logs()}") from None
                log.append(line)
                if line.startswith(prefix):
                    return line

        until("started", 120)  # the driver holds the batch until told to go on
        fault()
        began = time.monotonic()
        assert driver.stdin is not None
        driver.stdin.write("go\n")
        driver.stdin.flush()
        result = json.loads(until("result ", 120).removeprefix("result "))
        print(f"the batch finished {time.monotonic() - began:.1f} s after the fault")
        driver.wait(30)
    assert result["seen"] == list(range(1, len(questions) + 1))  # every one answered once
    assert not result["errors"], result["errors"]
    assert result["restarts"] >= 1  # the lost node's actors restarted on the other one
    return result, expected


def _alive(shared: Shared) -> list[dict[str, Any]]:
    return [n for n in shared.cluster.global_state.node_table() if n["Alive"]]


def test_batch_spread_over_two_nodes_completes_when_one_is_removed(shared, memory, dataset):
    c, victim = shared.cluster, shared.other
    if victim not in c.worker_nodes:
        pytest.skip("the second worker node is gone already (the partition test ran first)")
    result, expected = _drive(shared, memory, dataset, lambda: c.remove_node(victim),
                              host="127.0.0.1")
    assert set(result["placed"]) == {shared.near.node_id, victim.node_id}  # spread over both
    assert result["answers"] == expected
    answered_on = set(result["nodes"])
    assert victim.node_id in answered_on and len(answered_on) == 2
    assert result["alive"][victim.node_id] is False


def test_partitioned_node(shared, memory, dataset):
    """The far node is cut off mid-batch but keeps running: the head's fast health
    checks declare it dead, its actors restart on the near node, and the batch ends
    with every question answered once."""
    if shared.net is None:
        pytest.skip(shared.why_no_net)
    net, c = shared.net, shared.cluster
    for node in list(c.worker_nodes):  # only the near node stays; the far one joins next
        if node is not shared.near:
            c.remove_node(node)
    far_proc = shared.start_far(dict(os.environ))  # FAST_HEALTH included
    deadline = time.monotonic() + 60
    while not any(n["NodeManagerAddress"] == net.ns_ip for n in _alive(shared)):
        assert far_proc.poll() is None and time.monotonic() < deadline, \
            f"{_alive(shared)}\n{shared.logs()}"
        time.sleep(0.2)
    far = next(n["NodeID"] for n in _alive(shared) if n["NodeManagerAddress"] == net.ns_ip)
    # The actors in the namespace reach memory over the veth pair, not loopback; the far
    # node is cut off, alive.
    result, expected = _drive(shared, memory, dataset, host=net.host_ip,
                              fault=lambda: _ip("link", "set", net.host_if, "down"))
    assert far in result["placed"] and len(set(result["placed"])) == 2  # both worker nodes
    assert result["answers"] == expected
    answered_on = set(result["nodes"])
    assert far in answered_on and len(answered_on) == 2
    assert result["alive"][far] is False  # declared dead by the head's health checks
