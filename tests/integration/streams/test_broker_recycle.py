"""Issue 31: the embedded broker is recycled once drained (ADR 0006).

A guarded broker (the gate ``serve`` starts) and a real worker process: turns
are ingested, a user is deleted, the worker drains, the recycler (with a
1-byte RSS limit) restarts tansu empty behind the same address and login, and
the worker goes on with turns sent after it. Every acknowledged turn is stored
exactly once, and the deleted user's text is gone from the broker.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from memstrata.config import Settings
from memstrata.kafka.offsets import wait_committed
from memstrata.memory import Memory
from memstrata.model import Scope
from streams import topics
from streams.broker import GuardedBroker
from memstrata.wire import ControlEvent, TurnEvent
from streams.events import utcnow
from streams.produce import StreamProducer
from streams.recycle import Recycler
from tests.integration.streams.harness import WorkerProc, read_topic

ANN = Scope(tenant_id="t31", user_id="ann")
BOB = Scope(tenant_id="t31", user_id="bob")
SECRET = "bob-secret-heron-7731"
PADDING = "x" * 8000  # turn-sized records: the broker's growth is measurable


def turns(scope: Scope, sid: str, ns: range, word: str) -> list[TurnEvent]:
    return [TurnEvent(tenant_id=scope.tenant_id, user_id=scope.user_id, session_id=sid,
                      message_id=f"{sid}#{n}", role="user" if n % 2 else "assistant",
                      content=f"{word} {n} {PADDING}", ts=utcnow()) for n in ns]


async def send(broker: GuardedBroker, events: list[TurnEvent],
               delete: Scope | None = None) -> None:
    async with StreamProducer(broker.address, kafka=broker.client_settings()) as p:
        acks = [await p.send_turn(ev) for ev in events]
        await asyncio.gather(*acks)  # every one acknowledged by the broker
        if delete is not None:  # after every turn it sent (what StreamProducer.control does,
            # without its end-offset read, which can stall on this broker: see the report)
            await p.flush()
            await p._settle()
            ev = ControlEvent(type="delete_user", tenant_id=delete.tenant_id,
                              user_id=delete.user_id, session_id=None, ts=utcnow(),
                              after=dict(p.sent_after))
            await p.send_raw(topics.CONTROL, ev.to_bytes(), key=ev.key)


def drained(broker: GuardedBroker, group: str) -> bool:
    return asyncio.run(wait_committed(broker.address, group, [topics.TURNS, topics.CONTROL],
                                      90.0, follow=True, kafka=broker.client_settings()))


def texts(broker: GuardedBroker) -> list[bytes]:
    return [r.value for r in read_topic(broker.address, topics.TURNS,
                                        kafka=broker.client_settings())]


def test_recycle_frees_the_broker_and_keeps_every_turn(tmp_path: Path) -> None:
    group = "memstrata-recycle"
    logs = tmp_path / "logs"
    logs.mkdir()
    with GuardedBroker(log_dir=tmp_path / "broker") as broker:
        layout = {s.name: s.partitions for s in topics.specs(4)}
        broker.create_topics(topics.specs(4))
        empty = broker.tansu_rss_bytes()
        login = broker.client_settings()
        assert login.sasl_password is not None
        worker = WorkerProc(broker.address, tmp_path / "data", group, logs,
                            MEMSTRATA_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
                            MEMSTRATA_KAFKA_SASL_MECHANISM=login.sasl_mechanism,
                            MEMSTRATA_KAFKA_SASL_USERNAME=str(login.sasl_username),
                            MEMSTRATA_KAFKA_SASL_PASSWORD=login.sasl_password
                            .get_secret_value()).start()
        try:
            asyncio.run(send(broker, turns(ANN, "a1", range(1, 81), "ann before")
                             + turns(BOB, "b1", range(1, 4), SECRET), delete=BOB))
            assert drained(broker, group), worker.log_text[-3000:]
            full = broker.tansu_rss_bytes()
            assert any(SECRET.encode() in v for v in texts(broker))  # still held: the bug
            old_pid = broker.tansu_pid

            recycler = Recycler(broker, group=group, drain=[topics.TURNS, topics.CONTROL],
                                topics=layout, limit_bytes=1, interval_s=1)
            for _ in range(20):  # a commit under way makes a check find it busy
                if asyncio.run(recycler.check_once()):
                    break
            assert recycler.recycles == 1 and broker.recycles == 1
            assert broker.tansu_pid != old_pid
            after = broker.tansu_rss_bytes()
            assert after < empty + (full - empty) / 4, (empty, full, after)
            assert texts(broker) == []  # the deleted user's text (and all else) is gone

            asyncio.run(send(broker, turns(ANN, "a1", range(81, 91), "ann after")
                             + turns(ANN, "a2", range(1, 6), "ann new")))
            assert drained(broker, group), worker.log_text[-3000:]
            assert worker.alive()
        finally:
            rc = worker.stop()
        assert rc == 0, worker.log_text[-3000:]
    with Memory.open(Settings(data_dir=tmp_path / "data")) as m:
        for sid, count in (("a1", 90), ("a2", 5)):
            ids = [msg.content.split(" ", 3)[2] for t in m.raw(ANN, sid) for msg in t.messages]
            assert sorted(ids, key=int) == [str(n) for n in range(1, count + 1)], sid
        assert list(m.sessions(BOB)) == []  # the delete was applied before the recycle
    print(f"tansu RSS: empty {empty / 1e6:.1f} MB, full {full / 1e6:.1f} MB, "
          f"after the recycle {after / 1e6:.1f} MB")
