"""Stream vs batch: producing files to Kafka and draining them leaves the stores as ``ingest`` does.

One worker run streams three files at once, their sessions interleaved message
by message over several partitions and tenants (a LoCoMo slice, the
LongMemEval mini fixture, the JSONL example); batch ingest of the same files
goes to another data dir; the two are compared record by record: session
metadata and digests, raw turns, L0 units (ids, summaries, keywords, tags,
source ids), and per-scope counts in the vector and BM25 indexes.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory
from memstrata.model import Session
from streams.broker import EmbeddedBroker
from streams.produce import StreamProducer, produce_sessions
from tests.integration.streams.harness import ROOT, BatchSnapshots, WorkerProc, snapshot

pytestmark = pytest.mark.integration

LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo_dev.json"


def _locomo_slice(tmp: Path) -> Path:
    """Two conversations, first two sessions each (a LoCoMo file in miniature)."""
    data = json.loads(LOCOMO.read_text())
    out = []
    for rec in data[:2]:
        conv = {k: v for k, v in rec["conversation"].items()
                if not k.startswith("session_") or k.split("_")[1] in ("1", "2")}
        out.append({"sample_id": rec["sample_id"], "conversation": conv, "qa": []})
    path = tmp / "locomo_mini.json"
    path.write_text(json.dumps(out))
    return path


def _files(tmp: Path) -> dict[str, tuple[Path, str]]:
    files = {
        "longmemeval": (ROOT / "tests" / "fixtures" / "longmemeval_mini.json", "t-lme"),
        "jsonl": (ROOT / "examples" / "sample_turns.jsonl", "default"),
    }
    if LOCOMO.is_file():
        files["locomo"] = (_locomo_slice(tmp), "t-locomo")
    return files


@pytest.fixture(scope="module")
def streamed_and_batched(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    from tests.integration.streams.harness import start_group_at_end

    tmp = tmp_path_factory.mktemp("congruence")
    files = _files(tmp)
    parsed = {name: read_file(path, tenant_id=tenant) for name, (path, tenant) in files.items()}
    sessions: list[Session] = [s for p in parsed.values() for s in p.sessions]

    # Batch: what `memstrata ingest` does, file by file, into another data dir; it runs
    # in a child process while the worker streams (harness.BatchSnapshots).
    batched = BatchSnapshots(tmp / "batch", files)
    try:
        group = "memstrata-test-congruence"
        start_group_at_end(broker.address, group)
        # Small batches, produced faster than the worker stores them: batches come full
        # and older than the (short) freshness target, so the worker holds open windows
        # while behind (the path many open sessions take).
        worker = WorkerProc(broker.address, tmp / "stream", group, tmp,
                            MEMSTRATA_STREAM_BATCH_MAX="16",
                            MEMSTRATA_STREAM_FRESHNESS_S="0.2",
                            MEMSTRATA_STREAM_LOG_LEVEL="info").start()
        try:
            async def produce() -> None:
                async with StreamProducer(broker.address) as producer:
                    await produce_sessions(producer, sessions, interleave=True)
            asyncio.run(produce())
            worker.drain()
        finally:
            worker.stop()
        with Memory.open(Settings(data_dir=tmp / "stream")) as stream:
            streamed = {n: snapshot(stream, [s.scope for s in p.sessions])
                        for n, p in parsed.items()}
            tenants = {t: stream.stats(t) for t in ("t-lme", "t-locomo", "acme", "globex")}
        batch = batched.result(300)
    finally:
        batched.stop()
    yield {"batch": batch, "stream": streamed, "parsed": parsed, "tenants": tenants,
           "worker_log": worker.log_text}


@pytest.mark.parametrize("name", ["locomo", "longmemeval", "jsonl"])
def test_stream_equals_batch_record_by_record(streamed_and_batched: dict[str, Any],
                                              name: str) -> None:
    if name not in streamed_and_batched["parsed"]:
        pytest.skip(f"{LOCOMO} is not here (the LoCoMo dev split lives in shared/datasets)")
    batch = streamed_and_batched["batch"][name]
    stream = streamed_and_batched["stream"][name]
    parsed = streamed_and_batched["parsed"][name]
    assert sum(len(s["sessions"]) for s in batch.values()) == len(parsed.sessions) > 0
    assert stream.keys() == batch.keys()
    for scope in batch:
        b, s = batch[scope], stream[scope]
        assert s["sessions"].keys() == b["sessions"].keys(), scope
        for sid in b["sessions"]:
            assert b["sessions"][sid]["units"] and b["sessions"][sid]["digest"], (scope, sid)
            for part in ("meta", "digest", "turns", "units"):
                assert s["sessions"][sid][part] == b["sessions"][sid][part], (scope, sid, part)
        assert (s["vectors"], s["lexical"], s["raw_turns"]) == \
            (b["vectors"], b["lexical"], b["raw_turns"]), scope


def test_the_worker_held_open_windows_while_behind(streamed_and_batched: dict[str, Any]) -> None:
    """What makes the record-by-record equality above cover held windows too."""
    held = [int(n) for n in re.findall(r"sessions \((\d+) held\)",
                                       streamed_and_batched["worker_log"])]
    assert held and sum(held) > 0, streamed_and_batched["worker_log"][-2000:]


def test_each_tenant_sees_exactly_its_own_data(streamed_and_batched: dict[str, Any]) -> None:
    parsed = streamed_and_batched["parsed"]
    tenants = streamed_and_batched["tenants"]
    expected: dict[str, tuple[int, int]] = {}
    for p in parsed.values():
        for s in p.sessions:
            sessions, turns = expected.get(s.scope.tenant_id, (0, 0))
            expected[s.scope.tenant_id] = (sessions + 1, turns + len(s.turns))
    for tenant, stats in tenants.items():
        if tenant not in expected:
            continue
        assert (stats.sessions, stats.turns, stats.units) == (*expected[tenant],
                                                               expected[tenant][1]), tenant
