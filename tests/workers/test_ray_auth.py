"""Ray's token authentication, with a real head and node started as ``memstrata workers``
would start them: the node joins with the token, ``workers check`` reaches both with it,
and a wrong or missing token is one line naming the setting, at once (not after Ray's
twenty retries)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the ray extra is not installed")

from workers.cluster import RayAuthRefused, RayUnreachable, probe
from workers.node import head_command, node_command, node_env
from workers.settings import WorkersSettings

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A session of its own: the head's children (GCS, raylet...) are stopped with it.
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _alive_nodes(address: str, token: str) -> int:
    """Alive nodes the GCS lists (one RPC with the token; no driver needed)."""
    import grpc
    from ray.core.generated import gcs_pb2, gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        reply = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetAllNodeInfo(
            gcs_service_pb2.GetAllNodeInfoRequest(), timeout=5,
            metadata=[("authorization", f"Bearer {token}")])
    return sum(n.state == gcs_pb2.GcsNodeInfo.ALIVE for n in reply.node_info_list)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to every group at once, SIGKILL to what is left after a few seconds."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        for proc in procs:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        if all(p.poll() is not None for p in procs):
            return


@pytest.fixture(scope="module")
def token_head() -> Iterator[tuple[str, str]]:
    """A head requiring a token and one node that joined with it: (GCS address, token)."""
    token = secrets.token_hex(32)
    port, client_port = _free_port(), _free_port()
    temp = tempfile.mkdtemp(prefix="msrayt")  # short: Ray's socket paths live under it
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_DEDUP_LOGS": "0",
           **node_env(WorkersSettings(ray_auth_token=token))}
    head = _start(head_command(port, num_cpus=1, node_ip="127.0.0.1", client_port=client_port,
                               extra=[f"--temp-dir={temp}"]), env)
    address = f"127.0.0.1:{port}"
    procs = [head]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                probe(address, 2.0, token)
                break
            except RayUnreachable:
                if head.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the head did not start: "
                                         f"{head.stderr.read().decode()[-2000:]}") from None
                time.sleep(0.3)
        procs.append(_start(node_command(address, num_cpus=1, node_ip="127.0.0.1"), env))
        while _alive_nodes(address, token) < 2:  # the node joined with the token
            assert procs[1].poll() is None, procs[1].stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the node did not join within 60 s"
            time.sleep(0.3)
        yield address, token
    finally:
        _stop(procs)


def _check(address: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("RAY_AUTH", "MEMSTRATA_WORKERS_"))}
    return subprocess.run(
        [sys.executable, "-m", "memstrata", "workers", "check"], capture_output=True,
        text=True, timeout=90, env={**clean, "PYTHONPATH": str(ROOT),
                                    "MEMSTRATA_WORKERS_BACKEND": "ray",
                                    "MEMSTRATA_WORKERS_RAY_ADDRESS": address, **env})


def test_node_joins_with_the_token_and_check_sees_both(token_head):
    address, token = token_head
    res = _check(address, MEMSTRATA_WORKERS_RAY_AUTH_TOKEN=token)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "2 node(s), 2 CPUs" in res.stdout, res.stdout


@pytest.mark.parametrize("given,why", [
    ({}, "requires a token"),
    ({"MEMSTRATA_WORKERS_RAY_AUTH_TOKEN": "not-the-token-" + "0" * 20}, "refused the token"),
])
def test_a_wrong_or_missing_token_is_one_line_naming_the_setting(token_head, given, why):
    address, _ = token_head
    started = time.monotonic()
    res = _check(address, **given)
    took = time.monotonic() - started
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr  # no InvalidAuthToken retries printed
    assert why in lines[0] and "MEMSTRATA_WORKERS_RAY_AUTH_TOKEN" in lines[0]
    assert took < 15, took  # Ray's own retries took 20 s


def test_token_file_is_read_and_a_wrong_one_refused_in_process(token_head, tmp_path):
    address, token = token_head
    good = tmp_path / "token"
    good.write_text(token + "\n")
    meta = probe(address, 5.0, WorkersSettings(ray_auth_token_file=good).auth_token())
    import ray

    assert meta["ray_version"] == ray.__version__
    with pytest.raises(RayAuthRefused, match="MEMSTRATA_WORKERS_RAY_AUTH_TOKEN_FILE"):
        probe(address, 5.0, "f" * 64)
