"""Issue 31: the embedded broker is recycled once drained (ADR 0006).

A guarded broker (the gate ``serve`` starts) and a real worker process: turns
are ingested, a user is deleted, the worker drains, the recycler (with a
1-byte RSS limit) restarts tansu empty behind the same address and login, and
the worker goes on with turns sent after it. Every acknowledged turn is stored
exactly once, the deleted user's text is gone from the broker, and the DLQ's
record is carried over. Then a second recycle happens while a publisher keeps
ingesting through the embedded Ingest's path (``StoredPublisher`` and the intake
hold the recycle closes): it completes, and every acknowledged turn is stored
exactly once, with no ERROR logged in this process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from memstrata.config import Settings
from memstrata.kafka.offsets import wait_committed
from memstrata.memory import Memory
from memstrata.model import Scope
from streams import topics
from streams.broker import GuardedBroker
from memstrata.wire import ControlEvent, TurnEvent
from streams.events import utcnow
from streams.produce import StreamProducer
from memstrata.kafka.offsets import committed_offsets
from query_service.publish import IntakePaused, NotStored, StoredPublisher
from streams.recycle import IntakeHold, Recycler
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
               delete: Scope | None = None, poison: bool = False) -> None:
    async with StreamProducer(broker.address, kafka=broker.client_settings()) as p:
        acks = [await p.send_turn(ev) for ev in events]
        await asyncio.gather(*acks)  # every one acknowledged by the broker
        if poison:  # not a turn event: the worker sends it to the DLQ
            await p.send_raw(topics.TURNS, b"{not json", key=b"t31/ann/")
        if delete is not None:  # after every turn it sent (what StreamProducer.control does,
            # without its end-offset read, which can stall on this broker: see the report)
            await p.flush()
            await p._settle()
            ev = ControlEvent(type="delete_user", tenant_id=delete.tenant_id,
                              user_id=delete.user_id, session_id=None, ts=utcnow(),
                              after=dict(p.sent_after))
            await p.send_raw(topics.CONTROL, ev.to_bytes(), key=ev.key)


class CommittedTurns:
    """Test double for the worker's ``StoredTurns`` (the worker runs in another process
    here): a record counts as stored once the group has committed past it, which the
    worker does only once the stores hold it. It carries the real intake hold."""

    def __init__(self, broker: GuardedBroker, group: str) -> None:
        self.broker, self.group = broker, group
        self.intake = IntakeHold()
        self.done: dict[int, int] = {}
        self.generation = 0

    def reached(self, partition: int, offset: int) -> bool:
        return self.done.get(partition, 0) >= offset

    def refused(self, partition: int, offset: int) -> str | None:
        return None

    def forget(self) -> None:  # the recycler's on_killed: a fresh tansu numbers from 0
        self.generation += 1
        self.done = {}

    async def follow(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            seen = self.generation
            try:
                got = await committed_offsets(self.broker.address, self.group, topics.TURNS,
                                              range(4), kafka=self.broker.client_settings())
            except Exception:  # held or restarting: ask again
                got = None
            if got is not None and seen == self.generation:
                self.done = got
            await asyncio.sleep(0.1)


async def ingest_during_recycle(broker: GuardedBroker, group: str, recycler: Recycler,
                                stored: CommittedTurns, first: int
                                ) -> tuple[int, int, list[float]]:
    """Ingest two turns a call until a recycle is done and 3 calls more were acknowledged.

    A call turned away (held past its wait, or not confirmed in time) is sent again
    with the same ids. Returns the last id acknowledged, the retries, and the
    latency of each call acknowledged after the recycle.
    """
    pub = StoredPublisher(broker.client_settings(), stored, brokers=broker.address,
                          wait_s=20.0)
    await pub.start()
    stop = asyncio.Event()
    follower = asyncio.create_task(stored.follow(stop))
    state = {"last": first - 1, "retries": 0}
    after: list[float] = []

    async def produce() -> None:
        n = first
        while not (recycler.recycles and len(after) >= 3):
            batch = turns(ANN, "a1", range(n, n + 2), "ann steady")
            t0 = time.monotonic()
            try:
                await pub.publish(batch)
            except (IntakePaused, NotStored):
                state["retries"] += 1
                continue  # the same ids again: the worker keeps each once
            if recycler.recycles:
                after.append(time.monotonic() - t0)
            state["last"] = n + 1
            n += 2

    producer = asyncio.create_task(produce())
    try:
        await asyncio.sleep(1.0)  # steady traffic first
        for _ in range(10):
            if await recycler.check_once():
                break
            await asyncio.sleep(0.5)
        await asyncio.wait_for(producer, 120)
    finally:
        producer.cancel()
        stop.set()
        await asyncio.gather(producer, follower, return_exceptions=True)
        await pub.stop()
    return state["last"], state["retries"], after


def drained(broker: GuardedBroker, group: str) -> bool:
    return asyncio.run(wait_committed(broker.address, group, [topics.TURNS, topics.CONTROL],
                                      90.0, follow=True, kafka=broker.client_settings()))


def dlq(broker: GuardedBroker) -> list[tuple[int, bytes | None, bytes]]:
    return [(r.partition, r.key, r.value) for r in read_topic(
        broker.address, topics.DLQ, kafka=broker.client_settings())]


def texts(broker: GuardedBroker) -> list[bytes]:
    return [r.value for r in read_topic(broker.address, topics.TURNS,
                                        kafka=broker.client_settings())]


def test_recycle_frees_the_broker_and_keeps_every_turn(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
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
                             + turns(BOB, "b1", range(1, 4), SECRET), delete=BOB,
                             poison=True))
            assert drained(broker, group), worker.log_text[-3000:]
            full = broker.tansu_rss_bytes()
            assert any(SECRET.encode() in v for v in texts(broker))  # still held: the bug
            dead = dlq(broker)
            assert len(dead) == 1, dead  # the poison record
            old_pid = broker.tansu_pid

            recycler = Recycler(broker, group=group, drain=[topics.TURNS, topics.CONTROL],
                                topics=layout, limit_bytes=1, interval_s=1)
            for _ in range(20):  # a commit under way makes a check find it busy
                if asyncio.run(recycler.check_once()):
                    break
            assert recycler.recycles == 1 and broker.recycles == 1
            assert broker.tansu_pid != old_pid
            after = broker.tansu_rss_bytes()
            # Freed: at least half of what the records took (the fresh tansu holds the
            # carried DLQ record and the clients' connections again).
            assert after < empty + (full - empty) / 2, (empty, full, after)
            assert texts(broker) == []  # the deleted user's text (and all else) is gone
            assert dlq(broker) == dead and broker.carried == 1  # the DLQ is carried over

            # A recycle under steady Ingest: the intake hold lets the topics drain.
            stored = CommittedTurns(broker, group)
            steady = Recycler(broker, group=group, drain=[topics.TURNS, topics.CONTROL],
                              topics=layout, limit_bytes=1, interval_s=1,
                              on_killed=stored.forget, intake=stored.intake, hold_s=15)
            caplog.set_level(logging.INFO)
            caplog.clear()
            last, retries, latency = asyncio.run(
                ingest_during_recycle(broker, group, steady, stored, 81))
            assert steady.recycles == 1 and broker.recycles == 2, steady.busy
            assert stored.intake.waited > 0  # calls did meet the closed door
            errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
            assert errors == [], errors
            asyncio.run(send(broker, turns(ANN, "a2", range(1, 6), "ann new")))
            assert drained(broker, group), worker.log_text[-3000:]
            assert worker.alive()
        finally:
            rc = worker.stop()
        assert rc == 0, worker.log_text[-3000:]
    with Memory.open(Settings(data_dir=tmp_path / "data")) as m:
        for sid, count in (("a1", last), ("a2", 5)):
            ids = [msg.content.split(" ", 3)[2] for t in m.raw(ANN, sid) for msg in t.messages]
            assert sorted(ids, key=int) == [str(n) for n in range(1, count + 1)], sid
        assert list(m.sessions(BOB)) == []  # the delete was applied before the recycle
    print(f"tansu RSS: empty {empty / 1e6:.1f} MB, full {full / 1e6:.1f} MB, "
          f"after the recycle {after / 1e6:.1f} MB; steady recycle: {last - 80} turns "
          f"acknowledged, {retries} calls retried, Ingest held {steady.last_hold_s:.2f} s, "
          f"{stored.intake.waited} calls waited; calls after it: "
          f"{', '.join(f'{x:.2f}' for x in latency)} s")
