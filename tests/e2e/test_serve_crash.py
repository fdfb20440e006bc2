"""Nothing acknowledged is lost when ``memstrata serve`` is SIGKILLed, and nothing is left.

One scenario, shared by the tests (each ``serve`` start costs several seconds):
serve A takes acknowledged IngestBatch calls and is SIGKILLed; a tansu broker
is planted as if left behind by A (recorded in the data dir, holder gone); serve
B starts on the same data dir. Then: every message A acknowledged is in memory,
A's broker died with A, and B stopped the planted one before starting its own.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from streams.broker import PID_FILE, free_port, process_start, tansu_binary
from tests.support.serve_proc import (
    QUICK_JOIN,
    ServeProcess,
    add_key,
    alive,
    batch,
    stored_message_ids,
    tansu_children,
    wait_gone,
)

pytestmark = pytest.mark.integration

BATCHES, PER_BATCH = 4, 25
#: A shorter batching window than the default 2 s: the test waits for acks.
ENV = {"MEMSTRATA_STREAM_FRESHNESS_S": "0.5", **QUICK_JOIN}


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from memstrata.client import Durability, MemoryClient

    data = tmp_path_factory.mktemp("crash")
    key = add_key(data, "acme")
    started: list[Any] = []
    a = ServeProcess(data, ENV)
    started.append(a)
    out: dict[str, Any] = {"key": key, "acked": set(), "durability": set()}
    try:
        a.wait_serving()
        a_start = process_start(a.pid)
        with MemoryClient(a.address, api_key=key) as client:
            def send(b: int) -> None:
                ids = [f"b{b}-m{i}" for i in range(PER_BATCH)]
                reply = client.ingest(batch("crash", f"s{b % 2}", ids))
                assert reply.accepted == PER_BATCH
                out["acked"].update(ids)
                out["durability"].add(Durability.of(reply))

            with ThreadPoolExecutor(BATCHES) as pool:  # concurrent callers, as in production
                list(pool.map(send, range(BATCHES)))
        out["tansu_before"] = tansu_children(a.pid)
        a.kill()
        out["tansu_left"] = wait_gone(out["tansu_before"], timeout_s=10)
        for pid in out["tansu_left"]:  # the bug this guards against: do not leak it
            subprocess.run(["kill", "-9", str(pid)], check=False)

        # A broker left by a holder that is gone (A), recorded where serve records its own.
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        stale = subprocess.Popen([tansu_binary(), "broker", "--listener-url", url,
                                  "--advertised-listener-url", url, "--storage-engine",
                                  "memory://tansu/"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(stale)
        (data / "broker").mkdir(exist_ok=True)
        (data / "broker" / PID_FILE).write_text(json.dumps({
            "pid": stale.pid, "start": process_start(stale.pid), "port": port,
            "host": "127.0.0.1", "holder_pid": a.pid, "holder_start": a_start,
            "started": time.time()}))
        out["stale"] = stale

        b_proc = ServeProcess(data, ENV)
        started.append(b_proc)
        b_proc.wait_serving()
        out["serve_b"] = b_proc
        yield out
    finally:
        for p in reversed(started):
            if isinstance(p, ServeProcess):  # no graceful stop needed: its broker dies with it
                brokers = tansu_children(p.pid) if p.proc.poll() is None else []
                p.kill()
                wait_gone(brokers, timeout_s=10)
            elif p.poll() is None:
                p.kill()
                p.wait(10)


def test_every_acknowledged_message_survives_sigkill(crash: dict[str, Any]):
    from memstrata.client import Durability, MemoryClient
    from memstrata.model import Scope

    assert crash["durability"] == {Durability.STORED}
    with MemoryClient(crash["serve_b"].address, api_key=crash["key"]) as client:
        stored = stored_message_ids(client, Scope(tenant_id="acme", user_id="crash"))
    missing = crash["acked"] - stored
    assert len(crash["acked"]) == BATCHES * PER_BATCH
    assert not missing, f"{len(missing)} of {len(crash['acked'])} acknowledged messages lost"


def test_an_event_the_worker_refuses_is_not_acknowledged(crash: dict[str, Any]):
    """Stored means stored: an event the stream worker sends to the DLQ fails the call."""
    from memstrata.client import InvalidRequest, MemoryClient

    events = batch("crash", "s9", ["ok-1", "long-1"])
    events[1].content = "kayak " * 6000  # 36,000 characters: over the worker's limit
    with MemoryClient(crash["serve_b"].address, api_key=crash["key"]) as client:
        with pytest.raises(InvalidRequest, match=r"events\[1\]"):
            client.ingest(events)


def test_broker_dies_with_its_sigkilled_parent(crash: dict[str, Any]):
    assert len(crash["tansu_before"]) == 1, "serve runs one embedded tansu broker"
    assert crash["tansu_left"] == [], "the tansu broker outlived its SIGKILLed parent"


def test_start_stops_a_broker_left_by_a_dead_holder(crash: dict[str, Any]):
    stale = crash["stale"]
    assert wait_gone([stale.pid], timeout_s=5) == [], "the stale broker still runs"
    stale.wait(5)  # reap it (it is this test's child)
    # The new serve runs its own broker and records it in place of the stale one.
    info = json.loads((crash["serve_b"].data_dir / "broker" / PID_FILE).read_text())
    assert info["holder_pid"] == crash["serve_b"].pid and alive(info["pid"])
    assert info["pid"] in tansu_children(crash["serve_b"].pid)


def test_stale_check_spares_a_live_holders_broker(tmp_path: Path):
    """The check stops only what is stale: here the holder (this test) still lives."""
    import os

    from streams.broker import stop_stale_broker

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([tansu_binary(), "broker", "--listener-url", url,
                             "--advertised-listener-url", url, "--storage-engine",
                             "memory://tansu/"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        (tmp_path / PID_FILE).write_text(json.dumps({
            "pid": proc.pid, "start": process_start(proc.pid), "port": port,
            "holder_pid": os.getpid(), "holder_start": process_start(os.getpid())}))
        assert stop_stale_broker(tmp_path) is None and alive(proc.pid)
        # A pid file naming some other process on another port is not ours to kill.
        (tmp_path / PID_FILE).write_text(json.dumps({
            "pid": proc.pid, "start": process_start(proc.pid), "port": port + 1,
            "holder_pid": 2 ** 22 + 7, "holder_start": 1}))
        assert stop_stale_broker(tmp_path) is None and alive(proc.pid)
    finally:
        proc.kill()
        proc.wait(10)
