"""A real worker closes an idle session once, and its table entry sits on its turns' partition.

Before issue 31 the session table never emptied a session's provisional turns,
so the idle timer closed every session again each idle period and wrote a
changelog record each time; and ``tenant/user/session`` keys made tenant
``acme`` user ``x/y`` and tenant ``acme/x`` user ``y`` one table entry.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from memstrata.model import Scope
from streams.broker import EmbeddedBroker
from memstrata.wire import TurnEvent
from streams.events import utcnow
from streams.produce import StreamProducer
from streams.sessions import session_key
from tests.integration.streams.harness import WorkerProc, read_topic, wait_until

pytestmark = pytest.mark.integration

IDLE_S = 1.0  # short: the test waits out four idle periods after the closes
SESSIONS = [(Scope(tenant_id="acme", user_id="x/y"), "s"),
            (Scope(tenant_id="acme/x", user_id="y"), "s"),
            (Scope(tenant_id="t-idle", user_id="maya"), "a")]


def _turns(scope: Scope, sid: str) -> list[TurnEvent]:
    return [TurnEvent(tenant_id=scope.tenant_id, user_id=scope.user_id, session_id=sid,
                      message_id=f"{sid}#{n}", role="user" if n % 2 else "assistant",
                      content=f"{scope.tenant_id} {scope.user_id} message {n}", ts=utcnow())
            for n in (1, 2, 3)]


def _send(brokers: str) -> dict[str, int]:
    """Send each session's turns; the partition of each session's turns, by table key."""
    async def go() -> dict[str, int]:
        async with StreamProducer(brokers) as p:
            parts = {}
            for scope, sid in SESSIONS:
                for ev in _turns(scope, sid):
                    await (await p.send_turn(ev))
                parts[session_key(scope, sid)] = await p.partition_of(ev.key)
            return parts
    return asyncio.run(go())


def _key(record: Any) -> str:
    """A changelog record's table key (Faust writes the str key as JSON)."""
    return str(json.loads(record.key))


def _changelog(brokers: str, group: str) -> list[Any]:
    records = read_topic(brokers, f"{group}-sessions-changelog")
    return [r for r in records if r.key is not None]


def test_idle_sessions_close_once_and_keep_to_their_partition(
        broker: EmbeddedBroker, group: str, logs: Path, tmp_path: Path) -> None:
    worker = WorkerProc(broker.address, tmp_path / "worker", group, logs,
                        MEMSTRATA_STREAM_IDLE_S=str(IDLE_S)).start()
    rc = None
    try:
        parts = _send(broker.address)
        worker.drain()
        keys = set(parts)

        def closed() -> bool:
            tombstones = {_key(r) for r in _changelog(broker.address, group)
                          if r.value is None}
            return keys <= tombstones

        wait_until(closed, 60, step=0.5)
        before = len(_changelog(broker.address, group))
        time.sleep(IDLE_S * 4)  # four more idle periods with no traffic
        records = _changelog(broker.address, group)
        assert len(records) == before, "a closed session was written again"
        by_key: dict[str, list[Any]] = {}
        for r in records:
            by_key.setdefault(_key(r), []).append(r)
        assert set(by_key) == keys  # two sessions with '/' in their ids: two entries
        for key, recs in by_key.items():
            assert sum(r.value is None for r in recs) == 1 and recs[-1].value is None
            assert {r.partition for r in recs} == {parts[key]}  # with the session's turns
            states = [json.loads(r.value) for r in recs if r.value is not None]
            assert {(s["tenant_id"], s["user_id"], s["session_id"]) for s in states} == {
                tuple(json.loads(key))}
    finally:
        rc = worker.stop()
    log_text = worker.log_text
    assert rc == 0, log_text[-3000:]
    assert "CRITICAL" not in log_text and "Traceback" not in log_text, log_text[-3000:]
