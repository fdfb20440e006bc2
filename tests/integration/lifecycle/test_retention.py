"""Retention: a tenant's policy deletes exactly what it expires, everywhere it is derived.

Each test ingests the same small history (issue 36, item 1) into an embedded data
dir and sweeps it at a fixed instant (2025-06-01), with acme's policy of 365 days
per session and 730 days of user inactivity; globex has no policy (kept forever).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.cli import retention_cmd  # noqa: F401 - registers `retention`
from memstrata.config import Settings
from memstrata.layers.windowing import group_turns
from memstrata.lifecycle.retention import (
    RetentionPolicy,
    RetentionPolicyError,
    read_policies,
)
from memstrata.lifecycle.retention_service import RetentionService
from memstrata.lifecycle.retention_settings import RetentionSettings
from memstrata.lifecycle.retention_sweep import (
    JOURNAL,
    MemoryDeleter,
    Sweeper,
    read_receipts,
)
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta
from tests.integration.lifecycle.support import open_memory

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ACME = {"session_max_age_days": 365, "user_inactive_days": 730}
ANA, BOB, DAN, CY = (Scope(tenant_id="acme", user_id=u) for u in ("ana", "bob", "dan", "cy"))
GLOBEX_ANA = Scope(tenant_id="globex", user_id="ana")

#: (scope, session, date, a word only this session holds)
HISTORY: list[tuple[Scope, str, datetime | None, str]] = [
    (ANA, "a-2020", datetime(2020, 1, 10), "xylophone"),
    (ANA, "a-2023", datetime(2023, 11, 3), "harpsichord"),
    (ANA, "a-2025", datetime(2025, 4, 20), "accordion"),
    (BOB, "b-2019a", datetime(2019, 2, 1), "kayak"),
    (BOB, "b-2019b", datetime(2019, 8, 9), "canoe"),
    (DAN, "d-2018", datetime(2018, 5, 5), "marzipan"),
    (DAN, "d-2025", datetime(2025, 5, 30), "baklava"),
    (CY, "c-undated", None, "telescope"),
    (GLOBEX_ANA, "g-2019", datetime(2019, 3, 3), "xylophone"),
]
#: What acme's policy expires on NOW: two sessions by age, and bob (inactive) whole.
EXPIRED_SESSIONS = {(ANA, "a-2020"), (ANA, "a-2023"), (DAN, "d-2018"), (BOB, "b-2019a"),
                    (BOB, "b-2019b")}


def _session(scope: Scope, sid: str, date: datetime | None, word: str) -> Session:
    msgs = [Message(role="user", content=f"Today I talked about my {word} for an hour."),
            Message(role="assistant", content=f"Tell me more about the {word}."),
            Message(role="user", content=f"The {word} came from my grandmother in Porto."),
            Message(role="assistant", content="What a lovely thing to keep.")]
    return Session(meta=SessionMeta(scope=scope, session_id=sid, session_date=date),
                   turns=group_turns(msgs))


def _keys_file(path: Path, policies: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": {}, "tenants": {
        t: {"rate_per_s": 10, "retention": p} for t, p in policies.items()}}))
    return path


def _ingest(memory: Memory) -> None:
    memory.ingest([_session(*row) for row in HISTORY])
    for scope, sid, *_ in HISTORY:  # L1/L2 cached for every session
        memory.facts(scope, sid)
        memory.notes(scope, sid)
    memory.flush()


def _held(memory: Memory, scope: Scope, sid: str) -> dict[str, int]:
    """Everything the stores hold for one session, counted per store and layer."""
    docs = memory.docs
    assert memory.session_lexical is not None
    return {
        "session": int(docs.get_session(scope, sid) is not None),
        "raw_turns": len(docs.get_turns(scope, sid)),
        "l0_units": len(docs.session_units(scope, sid)),
        "cached_l1_l2": len(docs.session_layers(scope, sid)),
        "vectors": memory.vectors.count_session(scope, sid),
        "bm25": memory.lexical.count_session(scope, sid),
        "bm25_sessions": memory.session_lexical.count_session(scope, sid),
    }


@pytest.fixture
def history(tmp_path: Path, embedder: Any) -> Iterator[tuple[Memory, Path]]:
    data = tmp_path / "data"
    memory = open_memory(data, embedder)
    try:
        _ingest(memory)
        yield memory, data
    finally:
        memory.close()


def _acme() -> dict[str, RetentionPolicy]:
    return {"acme": RetentionPolicy(**ACME)}


def test_a_policy_deletes_exactly_the_expired_sessions_from_every_store(
        history: tuple[Memory, Path]) -> None:
    memory, data = history
    before = {(s, sid): _held(memory, s, sid) for s, sid, *_ in HISTORY}
    assert all(all(n > 0 for n in held.values()) for held in before.values()), before
    sweeper = Sweeper(memory.docs, MemoryDeleter(memory), data / "retention", clock=lambda: NOW)

    receipt = sweeper.sweep(_acme())

    for scope, sid, _, word in HISTORY:
        held = _held(memory, scope, sid)
        if (scope, sid) in EXPIRED_SESSIONS:
            assert all(n == 0 for n in held.values()), (scope, sid, held)
            hits = [h.session_id for h in memory.search(scope, f"my {word}")]
            assert sid not in hits
        else:
            assert held == before[(scope, sid)], (scope, sid)
    assert memory.sessions(BOB) == []  # the inactive user is gone whole
    assert memory.vectors.count(BOB) == memory.lexical.count(BOB) == 0
    # globex's "xylophone" session (same user id, no policy) is still found.
    assert [h.session_id for h in memory.search(GLOBEX_ANA, "xylophone")] == ["g-2019"]
    # The receipt names each deletion and what every store removed.
    part = receipt.tenants["acme"]
    deleted = {(d["user_id"], d["session_id"]) for d in part.deleted}
    assert deleted == {("ana", "a-2020"), ("ana", "a-2023"), ("dan", "d-2018"), ("bob", None)}
    assert part.sessions_deleted == 5 and part.users_deleted == 1 and not part.errors
    removed_units = sum(before[k]["l0_units"] for k in EXPIRED_SESSIONS)
    assert part.removed["vectors"] == part.removed["lexical"] == removed_units
    assert part.removed["docs"] == sum(before[k]["raw_turns"] for k in EXPIRED_SESSIONS)
    on_disk = read_receipts(data / "retention")
    assert [r["sweep_id"] for r in on_disk] == [receipt.sweep_id]
    assert on_disk[0]["tenants"]["acme"]["sessions_deleted"] == 5
    assert "globex" not in on_disk[0]["tenants"]
    assert not (data / "retention" / JOURNAL).exists()
    # A second sweep at the same instant finds nothing more.
    again = sweeper.sweep(_acme())
    assert again.sessions_deleted == 0


def test_a_dry_run_deletes_nothing(history: tuple[Memory, Path]) -> None:
    memory, data = history
    before = {(s, sid): _held(memory, s, sid) for s, sid, *_ in HISTORY}
    sweeper = Sweeper(memory.docs, None, data / "retention", clock=lambda: NOW)

    plans = sweeper.plan(_acme())

    (plan,) = plans
    would = {(e.scope.user_id, e.session_id, len(e.sessions)) for e in plan.expired}
    assert would == {("ana", "a-2020", 1), ("ana", "a-2023", 1), ("dan", "d-2018", 1),
                     ("bob", None, 2)}
    assert (plan.users, plan.sessions, plan.undated) == (4, 8, 1)
    assert {(s, sid): _held(memory, s, sid) for s, sid, *_ in HISTORY} == before
    assert not (data / "retention").exists()  # no receipt, no journal, no ledger


def test_a_restart_mid_sweep_finishes_it(tmp_path: Path, embedder: Any) -> None:
    class Crash(BaseException):
        """Stands for the process dying: nothing after it runs."""

    class CrashAfter(MemoryDeleter):
        """Test double: deletes like the real one, then dies at delete number ``k + 1``."""

        def __init__(self, memory: Memory, k: int) -> None:
            super().__init__(memory)
            self.left = k

        def delete(self, scope: Scope, session_id: str | None) -> dict[str, int]:
            if self.left == 0:
                raise Crash()
            self.left -= 1
            return super().delete(scope, session_id)

    data = tmp_path / "data"
    memory = open_memory(data, embedder)
    _ingest(memory)
    sweeper = Sweeper(memory.docs, CrashAfter(memory, 3), data / "retention", flush_every=2,
                      clock=lambda: NOW)
    with pytest.raises(Crash):
        sweeper.sweep(_acme())
    # Three deletes ran; two were flushed and noted done before the crash.
    left = sum(1 for s in EXPIRED_SESSIONS if memory.docs.get_session(*s) is not None)
    assert 0 < left < len(EXPIRED_SESSIONS)
    assert (data / "retention" / JOURNAL).exists() and read_receipts(data / "retention") == []
    memory.close()

    memory = open_memory(data, embedder)  # the restart
    try:
        later = NOW + timedelta(days=1)  # the finished sweep keeps its own instant
        receipt = Sweeper(memory.docs, MemoryDeleter(memory), data / "retention",
                          clock=lambda: later).finish_unfinished()
        assert receipt is not None and receipt.resumed and receipt.now == NOW
        for scope, sid, *_ in HISTORY:
            gone = all(n == 0 for n in _held(memory, scope, sid).values())
            assert gone == ((scope, sid) in EXPIRED_SESSIONS), (scope, sid)
        part = receipt.tenants["acme"]
        assert {(d["user_id"], d["session_id"]) for d in part.deleted} == {
            ("ana", "a-2020"), ("ana", "a-2023"), ("dan", "d-2018"), ("bob", None)}
        assert part.sessions_deleted == 5 and not part.errors
        assert not (data / "retention" / JOURNAL).exists()
        assert [r["resumed"] for r in read_receipts(data / "retention")] == [True]
    finally:
        memory.close()


def test_an_undated_session_ages_from_its_last_write_as_the_sweeps_saw_it(
        tmp_path: Path, embedder: Any) -> None:
    data = tmp_path / "data"
    memory = open_memory(data, embedder)
    try:
        memory.ingest([_session(CY, "c-undated", None, "telescope")])
        policy = {"acme": RetentionPolicy(session_max_age_days=30)}
        clock = [NOW]
        sweeper = Sweeper(memory.docs, MemoryDeleter(memory), data / "retention",
                          clock=lambda: clock[0])
        assert sweeper.sweep(policy).sessions_deleted == 0  # first seen: now
        clock[0] = NOW + timedelta(days=20)
        memory.append_messages(SessionMeta(scope=CY, session_id="c-undated"), [
            Message(role="user", content="I saw Saturn's rings last night.")])
        assert sweeper.sweep(policy).sessions_deleted == 0  # written again: clock restarts
        clock[0] = NOW + timedelta(days=45)  # 45 days after first seen, 25 after the write
        assert sweeper.sweep(policy).sessions_deleted == 0
        clock[0] = NOW + timedelta(days=51)
        assert sweeper.sweep(policy).sessions_deleted == 1
        assert memory.sessions(CY) == []
    finally:
        memory.close()


def test_policies_come_from_the_tenants_file_and_bad_ones_name_the_field(
        tmp_path: Path) -> None:
    from query_service.keys import KeysFileError, read_keys_file

    good = _keys_file(tmp_path / "keys.json", {"acme": ACME, "globex": {}})
    assert read_policies(good) == {"acme": RetentionPolicy(**ACME),
                                   "globex": RetentionPolicy()}
    assert read_policies(tmp_path / "absent.json") == {}
    # The query service reads the same file with the retention entry in it.
    assert read_keys_file(good).tenants["acme"].retention == RetentionPolicy(**ACME)
    for bad, field in (({"session_max_age_days": 0}, "session_max_age_days"),
                       ({"user_inactive_days": 100_000}, "user_inactive_days"),
                       ({"max_age": 3}, "max_age")):
        path = _keys_file(tmp_path / "bad.json", {"acme": bad})
        with pytest.raises(RetentionPolicyError, match=f"tenants.acme.retention.{field}"):
            read_policies(path)
        with pytest.raises(KeysFileError, match=field):
            read_keys_file(path)


def test_serve_sweeps_on_its_schedule_with_metrics(history: tuple[Memory, Path],
                                                   tmp_path: Path) -> None:
    memory, data = history
    keys = _keys_file(tmp_path / "keys.json", {"acme": ACME})
    service = RetentionService.for_memory(
        memory, keys_file=keys,
        settings=RetentionSettings(first_delay_s=0, interval_s=3600), clock=lambda: NOW)
    assert service is not None

    async def server() -> None:  # stands for the gRPC server: up until the sweep is done
        while not service.receipts:
            await asyncio.sleep(0.05)

    asyncio.run(asyncio.wait_for(service.alongside(server()), 120))
    assert service.receipts[0].sessions_deleted == 5
    assert all(memory.docs.get_session(*s) is None for s in EXPIRED_SESSIONS)
    text = generate_latest(service.registry).decode()
    assert 'memstrata_retention_sessions_deleted_total{tenant="acme"} 5.0' in text
    assert 'memstrata_retention_users_deleted_total{tenant="acme"} 1.0' in text
    assert 'memstrata_retention_sweeps_total{outcome="ok"} 1.0' in text
    assert 'memstrata_retention_last_sweep_timestamp_seconds{tenant="acme"}' in text
    assert "memstrata_retention_sweep_duration_seconds " in text


def test_the_cli_shows_dry_runs_and_applies(tmp_path: Path) -> None:
    data = tmp_path / "data"
    memory = Memory.open(Settings(data_dir=data))
    try:
        _ingest(memory)
    finally:
        memory.close()
    keys = _keys_file(data / "service-keys.json", {"acme": ACME})
    run = CliRunner()
    base = ["--data-dir", str(data), "--keys-file", str(keys)]

    shown = run.invoke(app, ["retention", "show", *base])
    assert shown.exit_code == 0, shown.output
    assert "acme" in shown.output and "365 days" in shown.output and "never" in shown.output

    dry = run.invoke(app, ["retention", "dry-run", "--json", "--as-of", "2025-06-01T12:00:00",
                           *base])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.output)["tenants"]["acme"]
    assert (planned["sessions_expired"], planned["users_expired"]) == (5, 1)
    assert {(e["user_id"], e["session_id"]) for e in planned["expired"]} == {
        ("ana", "a-2020"), ("ana", "a-2023"), ("dan", "d-2018"), ("bob", None)}
    table = run.invoke(app, ["retention", "dry-run", *base])  # the real clock: NOW or later
    assert table.exit_code == 0 and "a-2020" in table.output and "whole user" in table.output
    assert not (data / "retention").exists()

    applied = run.invoke(app, ["retention", "apply", "--json", *base])
    assert applied.exit_code == 0, applied.output
    receipt = json.loads(applied.output[applied.output.index("{"):])
    assert receipt["tenants"]["acme"]["sessions_deleted"] >= 5
    assert read_receipts(data / "retention")[0]["sweep_id"] == receipt["sweep_id"]
    with Memory.open(Settings(data_dir=data), read_only=True) as after:
        assert all(after.docs.get_session(*s) is None for s in EXPIRED_SESSIONS)
        assert [m.session_id for m in after.sessions(GLOBEX_ANA)] == ["g-2019"]


def test_serve_finishes_an_interrupted_sweep_at_start_and_reports_it(
        tmp_path: Path, embedder: Any) -> None:
    """A real ``memstrata serve`` (embedded broker and worker in-process) over a data dir
    whose sweep died part way: it finishes the sweep on start, before its first own
    sweep is due, and its /metrics count what the sweep deleted."""
    import os
    import signal
    import subprocess
    import sys
    import urllib.request

    from streams.broker import free_port
    from tests.support.serve_proc import QUICK_JOIN, stop_gracefully, wait_serving
    from tests.support.waiting import wait_for

    class Crash(BaseException):
        """Stands for the process dying."""

    class CrashAfterTwo(MemoryDeleter):
        """Test double: two real deletes, then the process 'dies'."""

        calls = 0

        def delete(self, scope: Scope, session_id: str | None) -> dict[str, int]:
            self.calls += 1
            if self.calls > 2:
                raise Crash()
            return super().delete(scope, session_id)

    data = tmp_path / "data"
    memory = open_memory(data, embedder)
    try:
        _ingest(memory)
        with pytest.raises(Crash):
            Sweeper(memory.docs, CrashAfterTwo(memory), data / "retention", flush_every=1,
                    clock=lambda: NOW).sweep(_acme())
    finally:
        memory.close()
    keys = _keys_file(data / "service-keys.json", {"acme": ACME})
    port, metrics_port = free_port(), free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "MEMSTRATA_DATA_DIR": str(data),
           "MEMSTRATA_SERVICE_KEYS_FILE": str(keys),
           "MEMSTRATA_RETENTION_FIRST_DELAY_S": "3600",  # only the unfinished sweep runs
           **QUICK_JOIN}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memstrata", "serve", "--port", str(port),
                                 "--metrics-port", str(metrics_port)],
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            wait_serving(f"127.0.0.1:{port}", 240, lambda: (
                f"serve exited: {log.read_text(errors='replace')[-3000:]}"
                if proc.poll() is not None else None))
            wait_for(lambda: read_receipts(data / "retention"), 120, "the finished sweep")
            (receipt,) = read_receipts(data / "retention")
            assert receipt["resumed"] and receipt["now"] == NOW.isoformat()
            assert receipt["tenants"]["acme"]["sessions_deleted"] == 5, receipt
            wait_for(lambda: "serving memstrata" in log.read_text(errors="replace"), 120,
                     "the serving banner (this serve, not another process on the port)")

            def scrape() -> str | None:
                try:
                    return urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                                  timeout=10).read().decode()
                except OSError:
                    return None

            metrics = wait_for(scrape, 60, f"/metrics on :{metrics_port}")
            # This process deleted what was left: bob (2 sessions) and d-2018; the receipt
            # also counts ana's two, deleted before the crash.
            assert 'memstrata_retention_sessions_deleted_total{tenant="acme"} 3.0' in metrics
            assert 'memstrata_retention_sweeps_total{outcome="ok"} 1.0' in metrics
            # A dry run works beside the running serve (it reads the doc store only).
            dry = subprocess.run([sys.executable, "-m", "memstrata", "retention", "dry-run",
                                  "--json", "--as-of", NOW.isoformat()], env=env,
                                 capture_output=True, text=True, timeout=120)
            assert dry.returncode == 0, dry.stderr
            assert json.loads(dry.stdout)["tenants"]["acme"]["expired"] == []
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(120) == 0
        finally:
            if proc.poll() is None:
                stop_gracefully(proc)
    assert "Traceback" not in log.read_text(errors="replace")
    with Memory.open(Settings(data_dir=data), read_only=True) as after:
        for scope, sid, *_ in HISTORY:
            assert (after.docs.get_session(scope, sid) is None) == (
                (scope, sid) in EXPIRED_SESSIONS), (scope, sid)
