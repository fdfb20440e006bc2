"""Retention in Kafka mode: the sweep publishes delete events and a real worker applies them.

The stream worker owns the stores; the sweep reads the doc store (read-only, beside
the worker) and publishes ``delete_session``/``delete_user`` to the control topic
through the real producer, waits until the worker's group has applied them, and the
stores no longer hold the expired sessions in any layer (issue 36, item 1).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.kafka import KafkaSettings
from memstrata.layers.windowing import group_turns
from memstrata.lifecycle.retention import RetentionPolicy
from memstrata.lifecycle.retention_sweep import Sweeper
from memstrata.lifecycle.retention_topic import ControlTopicDeleter
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta
from memstrata.store.factory import open_doc_store
from streams import topics
from streams.broker import EmbeddedBroker
from streams.produce import StreamProducer, produce_sessions
from tests.integration.streams.harness import WorkerProc, read_topic

pytestmark = pytest.mark.integration

NOW = datetime(2025, 6, 1, tzinfo=UTC)
ANA, BOB = Scope(tenant_id="t-ret", user_id="ana"), Scope(tenant_id="t-ret", user_id="bob")
KEPT = Scope(tenant_id="t-ret-none", user_id="ana")  # a tenant without a policy
HISTORY = [(ANA, "old", datetime(2021, 1, 1), "gondola"),
           (ANA, "new", datetime(2025, 5, 1), "trampoline"),
           (BOB, "b1", datetime(2019, 1, 1), "lighthouse"),
           (KEPT, "old", datetime(2019, 1, 1), "gondola")]
POLICY = {"t-ret": RetentionPolicy(session_max_age_days=365, user_inactive_days=730)}
GONE = {(ANA, "old"), (BOB, "b1")}


def _session(scope: Scope, sid: str, date: datetime, word: str) -> Session:
    msgs = [Message(role="user", content=f"We talked about the {word} again.",
                    source_id=f"{sid}-1"),
            Message(role="assistant", content=f"The {word} sounds memorable.",
                    source_id=f"{sid}-2")]
    return Session(meta=SessionMeta(scope=scope, session_id=sid, session_date=date),
                   turns=group_turns(msgs))


def _produce(brokers: str) -> None:
    async def go() -> None:
        async with StreamProducer(brokers) as p:
            await produce_sessions(p, [_session(*row) for row in HISTORY], close=True)
    asyncio.run(go())


def test_a_kafka_mode_sweep_is_applied_by_the_workers_through_the_control_topic(
        broker: EmbeddedBroker, group: str, logs: Path, tmp_path: Path) -> None:
    data = tmp_path / "stream"
    worker = WorkerProc(broker.address, data, group, logs).start()
    control_before = len(read_topic(broker.address, topics.CONTROL))
    try:
        _produce(broker.address)
        worker.drain()
        docs = open_doc_store(Settings(data_dir=data), read_only=True)
        try:
            assert {(s, sid) for s, sid, *_ in HISTORY} == {
                (s, m.session_id) for s, *_ in HISTORY for m in docs.list_sessions(s)}
            deleter = ControlTopicDeleter(KafkaSettings(brokers=broker.address, group=group),
                                          apply_wait_s=90)
            with deleter:
                receipt = Sweeper(docs, deleter, tmp_path / "retention",
                                  clock=lambda: NOW).sweep(POLICY)
        finally:
            docs.close()
        assert receipt.mode == "control-topic" and receipt.complete
        assert [f["applied"] for f in receipt.flushes] == [True], receipt.flushes
        part = receipt.tenants["t-ret"]
        assert (part.sessions_deleted, part.users_deleted, part.removed) == (2, 1, {"events": 2})
        # What went to the control topic: one event per deletion, after the turns.
        sent = {(ev.type, ev.user_id, ev.session_id) for _, _, ev in deleter.published}
        assert sent == {("delete_session", "ana", "old"), ("delete_user", "bob", None)}
        # The broker is shared with the other stream tests and the topic has several
        # partitions (read one after another), so this test's events are found by tenant.
        records = read_topic(broker.address, topics.CONTROL)
        assert len(records) > control_before
        deletes = [e for e in map(json.loads, (r.value for r in records))
                   if e["type"].startswith("delete_") and e["tenant_id"] == "t-ret"]
        assert {(e["tenant_id"], e["type"], e["user_id"], e.get("session_id"))
                for e in deletes} == {("t-ret", *s) for s in sent}
        assert all(e["after"] for e in deletes)
    finally:
        rc = worker.stop()
    assert rc == 0, worker.log_text[-3000:]
    with Memory.open(Settings(data_dir=data), read_only=True) as memory:
        for scope, sid, *_ in HISTORY:
            held = (memory.docs.get_session(scope, sid) is not None,
                    len(memory.docs.get_turns(scope, sid)),
                    len(memory.docs.session_units(scope, sid)),
                    memory.vectors.count_session(scope, sid),
                    memory.lexical.count_session(scope, sid))
            if (scope, sid) in GONE:
                assert held == (False, 0, 0, 0, 0), (scope, sid, held)
            else:
                assert held[0] and all(n > 0 for n in held[1:]), (scope, sid, held)
        assert memory.sessions(BOB) == []
