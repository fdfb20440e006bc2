"""``memstrata serve`` as a user runs it: keys, a remote ask, search through the service,
and a graceful stop on SIGTERM (real subprocesses, real gRPC on loopback)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import run
from tests.support.serve_proc import QUICK_JOIN, wait_serving

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(address: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    def exited() -> str | None:
        if proc.poll() is None:
            return None
        return f"serve exited: {proc.stderr.read() if proc.stderr else ''}"

    wait_serving(address, timeout, exited, step_s=0.2)


def _ingest_then_answer(address: str, key: str, data: Path) -> None:
    from memstrata.client import MemoryClient
    from memstrata.rpc import memory_pb2 as pb
    from memstrata.model import Scope

    maya = Scope(tenant_id="acme", user_id="maya")
    with MemoryClient(address, api_key=key) as client:
        reply = client.ingest([pb.TurnEvent(
            user_id="maya", session_id="2024-06-01-kayak", message_id="k1", role="user",
            content="My brother Tiago bought a red kayak called Gaivota.",
            session_date="2024-06-01")])
        assert reply.accepted == 1 and reply.route == "kafka"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            hits = client.search(maya, "kayak Gaivota")
            if hits and hits[0].session_id == "2024-06-01-kayak":
                break
            time.sleep(0.3)
        else:
            raise AssertionError("the ingested turn never became searchable")
        assert "Gaivota" in client.answer(maya, "What is my brother's kayak called?").answer
        # A delete right after an Ingest waits for the worker to store the turn first, so
        # the turn cannot arrive after the delete and bring the session back.
        client.ingest([pb.TurnEvent(
            user_id="maya", session_id="2024-06-02-canoe", message_id="c1", role="user",
            content="Tiago also rents a green canoe named Andorinha.",
            session_date="2024-06-02")])
        receipt = client.delete(maya, "2024-06-02-canoe")
        assert receipt.complete
        # Once the worker has applied everything on its topics, the session is still gone.
        from memstrata.kafka import BROKER_FILE
        from streams.worker import wait_drained

        from memstrata.kafka import KafkaSettings

        brokers = json.loads((data / BROKER_FILE).read_text())["brokers"]
        kafka = KafkaSettings().resolve(data)  # the embedded broker's per-start login
        assert asyncio.run(wait_drained(brokers, "memstrata-stream", 60, kafka=kafka)), \
            "worker not drained"
        assert "2024-06-02-canoe" not in [h.session_id for h in
                                          client.search(maya, "canoe Andorinha")]
        assert "2024-06-02-canoe" not in [m.session_id for m in client.sessions(maya)]


def _invoke(*args: str, env: dict[str, str]) -> Any:
    """``memstrata ARGS`` in this process (typer's runner), with ``env`` set meanwhile."""
    from typer.testing import CliRunner

    import memstrata.cli as cli

    if not any(g.name == "keys" for g in cli.app.registered_groups):
        cli._register_subcommands()  # as `main` does: ask, serve, keys...
    return CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200", **env})


def _remote_commands_take_the_keys_tenant(address: str, key: str, tmp_path: Path) -> None:
    """Every memory command through the service, no --tenant: the key's tenant applies.

    Before, the CLI sent tenant 'default' and the service refused it (PERMISSION_DENIED),
    and ingest and forget had no remote path at all. Run in-process to save interpreter
    starts; the service is the real ``serve`` subprocess.
    """
    def invoke(*args: str) -> Any:
        return _invoke(*args, "--remote", address, env={"MEMSTRATA_API_KEY": key})

    found = invoke("search", "--user", "maya", "--json", "half marathon knee")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[0]["session_id"] == "2024-04-10-running"
    asked = invoke("ask", "--user", "maya", "--json",
                   "When did I start training for a half marathon?")
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["sources"][0]["session_id"] == "2024-04-10-running"

    lme = tmp_path / "lme.json"  # LongMemEval: the file names no tenant
    lme.write_text(json.dumps([{
        "question_id": "rower", "question": "?", "answer": "-",
        "haystack_session_ids": ["r-1", "r-2"],
        "haystack_dates": ["2024/01/08 (Mon) 12:10", "2024/02/14 (Wed) 19:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "I row on the Douro every Sunday morning."},
             {"role": "assistant", "content": "A lovely river for rowing."}],
            [{"role": "user", "content": "My rowing club is called Remo Azul."},
             {"role": "assistant", "content": "Remo Azul, noted."}]]}]))
    refused = invoke("ingest", str(lme), "--tenant", "globex")
    assert refused.exit_code == 2 and "PERMISSION_DENIED" in refused.stderr, refused.output
    sent = invoke("ingest", str(lme))
    assert sent.exit_code == 0, sent.output
    assert f"2 sessions read, 2 sent to {address}" in sent.stdout, sent.stdout
    assert "tenant=acme users=rower" in sent.stdout, sent.stdout
    listed = invoke("sessions", "--user", "rower")
    assert listed.exit_code == 0 and "r-1" in listed.stdout and "r-2" in listed.stdout, \
        listed.output
    hits = invoke("search", "--user", "rower", "--json", "rowing club name")
    assert hits.exit_code == 0 and json.loads(hits.stdout)[0]["session_id"] == "r-2", \
        hits.output
    denied = invoke("forget", "--tenant", "globex", "--user", "rower", "--yes")
    assert denied.exit_code == 2 and "PERMISSION_DENIED" in denied.stderr, denied.output
    forgot = invoke("forget", "--user", "rower", "--yes")
    assert forgot.exit_code == 0, forgot.output
    assert "forgot all memory of tenant=acme user=rower" in forgot.stdout, forgot.stdout
    again = invoke("forget", "--user", "rower", "--yes")  # issue 31: was a 30-line traceback
    assert again.exit_code == 1 and "Traceback" not in again.output, again.output
    assert again.stderr.strip().splitlines() == [
        "no memory for tenant=acme user=rower: nothing forgotten (check --tenant, default "
        "'default', and --user)"], again.stderr
    gone = invoke("sessions", "--user", "rower")
    assert gone.exit_code == 0 and "no sessions for tenant=acme user=rower" in gone.stdout, \
        gone.output
    nothing = invoke("ask", "--user", "rower", "What is my rowing club called?")
    assert nothing.exit_code == 1, nothing.output
    assert "no memory for tenant=acme user=rower" in nothing.stderr
    assert "the API key's tenant" in nothing.stderr


def test_serve_keys_remote_ask_and_graceful_stop(tmp_path: Path,
                                                 sample_copy: Callable[[Path], Path]):
    data = sample_copy(tmp_path / "data")  # the sample, ingested
    added = run("keys", "add", "acme", data_dir=data)
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip()
    assert key.startswith("msk_") and "shown only now" in added.stderr
    assert key not in (data / "service-keys.json").read_text()

    port = _free_port()
    address = f"127.0.0.1:{port}"
    # A short batching window (default 2 s): each Ingest below waits for its batch.
    env = {**os.environ, "MEMSTRATA_DATA_DIR": str(data), "MEMSTRATA_STREAM_FRESHNESS_S": "0.5",
           **QUICK_JOIN}
    proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_serving(address, proc)
        with_key = {"MEMSTRATA_API_KEY": key}
        # One read as a real subprocess, the others in-process meanwhile (an interpreter
        # start each cost more than the call): the service is the real `serve` either way.
        with ThreadPoolExecutor(1) as pool:
            asking = pool.submit(
                run, "ask", "--tenant", "acme", "--user", "maya", "--remote", address,
                "--json", "When did I start training for a half marathon?", data_dir=data,
                env=with_key)
            local = {"MEMSTRATA_DATA_DIR": str(data), **with_key}
            # No flag: the data dir is held by `serve`, so search goes through it.
            found = _invoke("search", "--tenant", "acme", "--user", "maya", "--json",
                            "half marathon knee", env=local)
            listed = _invoke("sessions", "--tenant", "acme", "--user", "maya", env=local)
            shown = _invoke("show", "--tenant", "acme", "--user", "maya", "--layers", "1,3",
                            "2024-04-10-running", env=local)
            refused = _invoke("search", "--tenant", "globex", "--user", "maya", "--remote",
                              address, "knee", env=local)
            asked = asking.result()
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        assert answer["sources"][0]["session_id"] == "2024-04-10-running"
        assert answer["summary"]["haystack_sessions"] >= 1
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)[0]["session_id"] == "2024-04-10-running"
        assert listed.exit_code == 0 and "2024-04-10-running" in listed.stdout, listed.output
        assert shown.exit_code == 0 and "half marathon" in shown.stdout, shown.output
        assert refused.exit_code == 2 and "PERMISSION_DENIED" in refused.stderr, refused.output
        assert (data / "serve.json").exists()
        _remote_commands_take_the_keys_tenant(address, key, tmp_path)
        # The embedded default runs the broker and the stream worker in the same process:
        # Ingest publishes to the broker, the worker indexes, Answer finds the new turn.
        _ingest_then_answer(address, key, data)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    log = proc.stderr.read() if proc.stderr else ""
    assert code == 0, log
    # One summary line per part when it stops (issue 16).
    assert re.search(r"query service stopped: ran \S+; \d+ calls served, \d+ failed", log), log
    assert "stream worker stopped: ran " in log and "nothing left unstored" in log, log
    assert not (data / "serve.json").exists()
