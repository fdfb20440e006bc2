"""Scale-out: a second worker joins mid-stream, then the first leaves; nothing lost or doubled.

Several workers need stores they can all write: here documents (raw turns,
units, digests) and BM25 live in osmem-server, an OpenSearch-compatible server.
Vectors stay in each worker's own Qdrant Edge dir: no vector store that
several processes can share runs on this machine (Qdrant Edge and qdrant-client's
local mode are single-process, and there is no Qdrant server here), so the
vector side of a multi-worker deployment (a Qdrant server) is not under test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.ingest.formats import read_file
from memstrata.memory import Memory
from streams import topics
from streams.broker import EmbeddedBroker
from tests.integration.streams.diffs import differences, in_topic
from tests.integration.streams.harness import (
    ROOT,
    BackgroundProducer,
    WorkerProc,
    group_members,
    read_topic,
    snapshot,
    wait_until,
)

pytestmark = pytest.mark.integration

FILE = ROOT / "tests" / "fixtures" / "longmemeval_mini.json"


def test_worker_joins_then_leaves_mid_stream(broker: EmbeddedBroker, group: str, logs: Path,
                                             tmp_path: Path, osmem_url: str,
                                             batch_ingest: Callable[..., Any]) -> None:
    shared = {"MEMSTRATA_LEXICAL_BACKEND": "opensearch", "MEMSTRATA_DOC_BACKEND": "opensearch",
              "MEMSTRATA_OPENSEARCH_URL": osmem_url,
              "MEMSTRATA_OPENSEARCH_INDEX_PREFIX": "rebal"}
    parsed = read_file(FILE, tenant_id="t-reb")
    sessions = parsed.sessions
    messages = sum(len(t.messages) for s in sessions for t in s.turns)
    # Batch ingest of the same sessions, to compare with, runs while the workers stream.
    batched = batch_ingest(tmp_path / "batch", {"all": (FILE, "t-reb")})
    l0_before = len(read_topic(broker.address, topics.L0))

    first = WorkerProc(broker.address, tmp_path / "w1", group, logs, **shared)
    second = WorkerProc(broker.address, tmp_path / "w2", group, logs, **shared)
    second.log_dir = logs / "second"
    second.log_dir.mkdir()
    first.start()
    # The producer holds after 60% of the messages until the first worker has left, so
    # both the join and the leave happen mid-stream even on a slow, loaded machine.
    producer = BackgroundProducer(broker.address, sessions, rate=messages / 15,
                                  hold_at=int(messages * 0.6))
    try:
        producer.start()
        wait_until(lambda: len(read_topic(broker.address, topics.L0)) > l0_before + 2, 90, 0.3)
        second.start()  # joins: the group rebalances, partitions move to it
        # A worker takes seconds to start: "joined" is the group's word, not Popen's.
        wait_until(lambda: group_members(broker.address, group) == ("Stable", 2), 90, 0.3)
        joined = len(read_topic(broker.address, topics.L0))
        wait_until(lambda: producer.held.is_set()
                   or len(read_topic(broker.address, topics.L0)) > joined + 5, 60, 0.3)
        assert not producer.done.is_set(), "the stream ended before the second worker joined"
        assert first.stop() == 0  # leaves mid-stream: its partitions move to the second
        producer.resume.set()
        producer.join(120)
        assert producer.done.is_set() and not producer.errors, producer.errors
        second.drain()
    finally:
        producer.join(5)
        first.stop()
        second.stop()

    expected = batched.result(300)["all"]
    reader = Settings(data_dir=tmp_path / "reader", lexical_backend="opensearch",
                      doc_backend="opensearch", opensearch_url=osmem_url,
                      opensearch_index_prefix="rebal")
    with Memory.open(reader) as shared_stores:
        got = snapshot(shared_stores, [s.scope for s in sessions])
    for scope in expected:  # vectors are per worker here (see the module docstring)
        expected[scope].pop("vectors")
        got[scope].pop("vectors")
    assert sum(len(v["sessions"]) for v in got.values()) == len(sessions)
    if got != expected:
        diff = differences(expected, got)
        raise AssertionError("\n".join(
            diff + in_topic(read_topic(broker.address, topics.TURNS), diff)))
