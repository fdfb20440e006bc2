"""``memstrata export``, ``backup`` and ``restore`` as a user runs them (real subprocesses).

* Export then ingest into a new data dir through the CLI: the second export's
  turn events equal the first's, the header line is skipped silently, and the
  derived layers go to their own file.
* Beside a running ``memstrata serve`` (broker, stream worker and service in
  one process) while a client keeps ingesting: ``export`` goes through the
  service and reads what the local export read; ``backup`` pauses serve's
  writes for its copy; ``restore`` into a new data dir passes ``memstrata
  check``, and every message acknowledged before the backup began is there.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memstrata.model import EXPORT_HEADER_KEY, Scope
from memstrata.store.sqlite_docs import SqliteDocStore
from tests.e2e.test_cli import run, run_all
from tests.support.serve_proc import QUICK_JOIN, ServeProcess, add_key, batch


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def test_export_then_ingest_through_the_cli_round_trips(tmp_path: Path,
                                                         sample_copy: Callable[[Path], Path]):
    data = sample_copy(tmp_path / "data")
    acme, globex = tmp_path / "acme.jsonl", tmp_path / "globex.jsonl"
    first, second, bad_user, no_file, no_scope = run_all(
        lambda: run("export", "--tenant", "acme", "-o", str(acme), "--layers", data_dir=data),
        lambda: run("export", "--tenant", "globex", "-o", str(globex), data_dir=data),
        lambda: run("export", "--tenant", "acme", "--user", "nobody", data_dir=data),
        lambda: run("export", "--tenant", "acme", "--layers", data_dir=data),
        lambda: run("export", data_dir=data))
    assert first.returncode == 0, first.stderr
    assert "exported tenant=acme (2 users): 4 sessions, 9 turns, 18 messages" in first.stderr
    assert f"layer records to {tmp_path / 'acme.layers.jsonl'}" in first.stderr
    header = json.loads(acme.read_text().splitlines()[0])[EXPORT_HEADER_KEY]
    assert (header["scope"], header["tenant_id"], header["layers_file"]) == (
        "tenant", "acme", "acme.layers.jsonl")
    assert second.returncode == 0, second.stderr
    assert bad_user.returncode == 1 and "no memory for user 'nobody'" in bad_user.stderr
    assert no_file.returncode == 2 and "give -o FILE" in no_file.stderr
    assert no_scope.returncode == 2 and "--user or --tenant" in no_scope.stderr
    layers = [json.loads(x) for x in (tmp_path / "acme.layers.jsonl").read_text().splitlines()]
    assert {r["layer"] for r in layers} == {"L0"} and len(layers) == 9  # one unit per turn

    new = tmp_path / "new"
    for f in (acme, globex):
        r = run("ingest", str(f), data_dir=new)
        assert r.returncode == 0, r.stderr
        assert "0 skipped records" in r.stdout and "skipped" not in r.stderr
    again = run("export", "--tenant", "acme", "-o", str(tmp_path / "again.jsonl"), data_dir=new)
    assert again.returncode == 0, again.stderr
    assert _events(tmp_path / "again.jsonl") == _events(acme)


class Load(threading.Thread):
    """A client ingesting batches without pause; records each acknowledged message id."""

    def __init__(self, address: str, key: str) -> None:
        super().__init__(daemon=True)
        self.address, self.key = address, key
        self.acked: list[str] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from memstrata.client import MemoryClient

        with MemoryClient(self.address, api_key=self.key, timeout_s=60) as client:
            n = 0
            while not self.stop.is_set():
                ids = [f"load-{n + i}" for i in range(4)]
                try:
                    client.ingest(batch("load", f"s{n // 40}", ids))
                except Exception as exc:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                    time.sleep(0.2)
                    continue
                self.acked += ids
                n += 4


def test_backup_while_serving_under_write_load_restores_and_checks(
        tmp_path: Path, sample_copy: Callable[[Path], Path]):
    data = sample_copy(tmp_path / "data")
    key = add_key(data, "acme")
    local = run("export", "--tenant", "acme", "--user", "maya", "-o",
                str(tmp_path / "local.jsonl"), data_dir=data)
    assert local.returncode == 0, local.stderr
    # A short batching window (default 2 s): the load's every Ingest waits for its batch.
    serve = ServeProcess(data, {"MEMSTRATA_STREAM_FRESHNESS_S": "0.3", **QUICK_JOIN})
    load = Load(serve.address, key)
    try:
        serve.wait_serving()
        remote = run("export", "--tenant", "acme", "--user", "maya", "-o",
                     str(tmp_path / "remote.jsonl"), data_dir=data,
                     env={"MEMSTRATA_API_KEY": key})
        assert remote.returncode == 0, remote.stderr
        header = json.loads((tmp_path / "remote.jsonl").read_text().splitlines()[0])
        assert header[EXPORT_HEADER_KEY]["source"] == f"service {serve.address}"
        assert _events(tmp_path / "remote.jsonl") == _events(tmp_path / "local.jsonl")

        load.start()
        deadline = time.monotonic() + 120
        while len(load.acked) < 12 and time.monotonic() < deadline:
            time.sleep(0.1)
        acked_before = list(load.acked)
        assert len(acked_before) >= 12, (load.failures[-3:], serve.log())
        backed = run("backup", str(tmp_path / "bk"), data_dir=data)
        assert backed.returncode == 0, backed.stderr + serve.log()
        assert f"writes of memstrata serve (pid {serve.pid}) paused" in backed.stdout
        assert "writes held" in backed.stdout
        more = len(load.acked)
        while len(load.acked) < more + 8 and time.monotonic() < deadline:
            time.sleep(0.1)  # the service takes writes again after the backup
        assert len(load.acked) >= more + 8, (load.failures[-3:], serve.log())
    finally:
        load.stop.set()
        if load.is_alive():
            load.join(60)
        serve.stop()
    assert not load.failures, load.failures[:3]

    restored = tmp_path / "restored"
    r = run("restore", str(tmp_path / "bk"), data_dir=restored)
    assert r.returncode == 0, r.stderr
    assert "every checksum verified" in r.stdout
    checked = run("check", data_dir=restored)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{restored}: ok" in checked.stdout

    manifest = json.loads((tmp_path / "bk" / "manifest.json").read_text())
    docs = SqliteDocStore(restored / "docs.sqlite3", read_only=True)
    try:
        scope = Scope(tenant_id="acme", user_id="load")
        kept = {i for m in docs.list_sessions(scope)
                for t in docs.get_turns(scope, m.session_id) for i in t.source_ids}
        stats = docs.stats()
    finally:
        docs.close()
    assert set(acked_before) <= kept
    assert len(kept) < len(load.acked)  # one instant's copy, not the end state
    assert {k: stats[k] for k in ("sessions", "turns", "units")} == {
        k: manifest["counts"][k] for k in ("sessions", "turns", "units")}
