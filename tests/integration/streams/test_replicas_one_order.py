"""A delete acknowledged through one replica is never undone by a stalled worker (ADR 0005).

Two ``serve --no-stream`` replicas (Kafka mode) publish to the tansu broker and
send deletes through the control topic; two stream workers in one consumer
group share the doc and BM25 stores in osmem-server. The user has two
sessions: ``near`` on a partition of the worker that owns the user's control
partition, ``far`` on a partition of the other worker under the session keys
used before ADR 0005 (``tenant/user/session``). Part of the user is stored,
then the other worker is stopped (SIGSTOP) while a batch of both sessions is
acknowledged through the first replica and queued; the user is deleted
through the second replica while one more batch races it through the first.
Once the delete is acknowledged the stalled worker resumes and every worker
catches up: nothing acknowledged before the delete may be left, and the racing
batch is there whole or not at all.

With session keys the delete waited only for the partitions of its own
worker, so the resumed worker stored ``far``'s queued turns after the delete
(the test fails on that code). With the user key (``tenant/user/``) every event
of the user is on one partition, ordered by the log, whatever the replica.

The second test kills (SIGKILL) the worker that owns the user's partition, with
a batch of the user acknowledged and queued for it; the group hands its
partitions to the other worker, which must store that batch before it applies
the delete (the delete's wait for the turns it follows: without it the batch
comes back). Another user's turns, acknowledged through both replicas before
and after the kill, are each stored once. It runs after the stall test and
leaves one worker in the group.

Vectors stay in each worker's own Qdrant Edge dir (no vector store that several
processes share runs here: see test_rebalance), so the check reads the shared
doc and BM25 stores, where a turn stored after the delete would show.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata.client import AsyncMemoryClient, event
from memstrata.config import Settings
from memstrata.memory import Memory
from memstrata.model import Scope
from query_service.keys import add_key
from streams import topics
from streams.broker import EmbeddedBroker
from tests.integration.streams.conftest import PARTITIONS
from tests.integration.streams.harness import FAST, ROOT, WorkerProc, start_group_at_end, wait_until

pytestmark = pytest.mark.integration

TENANT = "t-order"
PREFIX = "order"
USER = "ora"
#: The group's session timeout. tansu (0.6) keeps one per group, set by the member that
#: formed it, not one per member, so one value serves both tests: long enough that the
#: stalled worker keeps its partitions while it is stopped (a rebalance would hand them to
#: the other worker, which would then wait for them; the stops last 1-3 s), short enough
#: that the killed worker's partitions move soon (the delete is applied about 15 s after).
SESSION_TIMEOUT_S = "8"


@dataclass
class Stack:
    replicas: list[str]
    workers: list[WorkerProc]
    key: str
    group: str
    brokers: str
    osmem: str
    root: Path


def _serve(root: Path, name: str, env: dict[str, str], keys: Path) -> subprocess.Popen[bytes]:
    data = root / name
    data.mkdir()
    log = (root / f"{name}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", "serve", "--port", "0", "--no-stream",
         "--keys-file", str(keys), "--data-dir", str(data)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc


def _address(root: Path, name: str, proc: subprocess.Popen[bytes]) -> str:
    marker = root / name / "serve.json"

    def up() -> bool:
        assert proc.poll() is None, (root / f"{name}.log").read_text()[-3000:]
        return marker.exists()
    wait_until(up, 90, 0.2)
    return str(json.loads(marker.read_text())["address"])


@pytest.fixture(scope="module")
def stack(broker: EmbeddedBroker, osmem_server: Any,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("replicas")
    clone = osmem_server.clone()
    group = "memstrata-replicas-order"
    start_group_at_end(broker.address, group)
    shared = {"MEMSTRATA_LEXICAL_BACKEND": "opensearch", "MEMSTRATA_DOC_BACKEND": "opensearch",
              "MEMSTRATA_OPENSEARCH_URL": clone.url, "MEMSTRATA_OPENSEARCH_INDEX_PREFIX": PREFIX}
    keys = root / "keys.json"
    _, key = add_key(keys, TENANT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **FAST, **shared,
           "MEMSTRATA_KAFKA_BROKERS": broker.address, "MEMSTRATA_KAFKA_GROUP": group,
           "MEMSTRATA_SERVICE_DELETE_WAIT_S": "30"}
    workers = []
    for i in (1, 2):  # a log dir each: WorkerProc names its log after the group
        (root / f"logs-w{i}").mkdir()
        workers.append(WorkerProc(broker.address, root / f"w{i}", group, root / f"logs-w{i}",
                                  **shared, MEMSTRATA_KAFKA_SESSION_TIMEOUT_S=SESSION_TIMEOUT_S))
    procs = [_serve(root, f"r{i}", env, keys) for i in (1, 2)]
    try:
        for w in workers:
            w.start()
        replicas = [_address(root, f"r{i}", p) for i, p in zip((1, 2), procs, strict=True)]
        yield Stack(replicas, workers, key, group, broker.address, clone.url, root)
    finally:
        for w in workers:  # a stopped worker cannot act on SIGTERM
            if w.proc is not None and w.alive():
                os.kill(w.proc.pid, signal.SIGCONT)
        for p in procs:
            p.terminate()
        for w in workers:
            w.stop()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        clone.close()


async def _members(brokers: str, group: str) -> int:
    """How many members the group has once it is stable (0 while it rebalances).

    tansu answers DescribeGroups without the members' assignments, so who owns
    what is found by stopping a worker (:func:`_split`).
    """
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=brokers)
    await admin.start()
    try:
        [described] = await admin.describe_consumer_groups([group])
        return sum(len(g[-1]) for g in described.groups if g[2] == "Stable")
    finally:
        await admin.close()


def _partition(key: str) -> int:
    from aiokafka.partitioner import DefaultPartitioner

    parts = list(range(PARTITIONS))
    return int(DefaultPartitioner()(key.encode(), parts, parts))


def _pick(prefix: str, key: Any, partitions: set[int]) -> str:
    """The first id ``prefix<n>`` whose record key ``key(id)`` lands on one of ``partitions``."""
    return next(f"{prefix}{n}" for n in range(10_000) if _partition(key(f"{prefix}{n}"))
                in partitions)


async def _probe(brokers: str, tag: str) -> None:
    """One turn on every turns partition (placed explicitly, keyed as its event says)."""
    from aiokafka import AIOKafkaProducer

    from memstrata.wire import TurnEvent
    from streams.events import utcnow

    producer = AIOKafkaProducer(bootstrap_servers=brokers, acks="all")
    await producer.start()
    try:
        for p in range(PARTITIONS):
            ev = TurnEvent(tenant_id="t-probe", user_id=f"p{p}", session_id=tag,
                           message_id=f"{tag}#{p}", role="user", content=f"probe {tag}",
                           ts=utcnow())
            await producer.send_and_wait(topics.TURNS, ev.to_bytes(), key=ev.key, partition=p)
    finally:
        await producer.stop()


def _lagging(stack: Stack) -> set[int]:
    from streams.worker import group_lag

    lag = asyncio.run(group_lag(stack.brokers, stack.group, [topics.TURNS]))
    return {p for (_, p), n in lag.items() if n > 0}


def _split(stack: Stack, stalled: WorkerProc) -> tuple[set[int], set[int]]:
    """The turns partitions of ``stalled`` and of the other worker, once the group is stable.

    The stalled worker is stopped and a probe goes to every partition: the other
    worker drains its own partitions (together, in one fetch); what still lags
    two seconds after the first partition drained is the stopped worker's.
    """
    wait_until(lambda: asyncio.run(_members(stack.brokers, stack.group)) == 2, 60, 0.5)
    assert stalled.proc is not None
    os.kill(stalled.proc.pid, signal.SIGSTOP)
    try:
        asyncio.run(_probe(stack.brokers, "split"))
        wait_until(lambda: len(_lagging(stack)) < PARTITIONS, 30, 0.2)
        time.sleep(2.0)
        late = _lagging(stack)
    finally:
        os.kill(stalled.proc.pid, signal.SIGCONT)
    assert 0 < len(late) < PARTITIONS, late
    return late, set(range(PARTITIONS)) - late


@pytest.fixture(scope="module")
def split(stack: Stack) -> tuple[set[int], set[int]]:
    """The turns partitions of w2 and of w1, found once for both tests: the group does not
    rebalance in between (w2 is stopped for less than the session timeout, w1 never)."""
    # A worker's first batch is slow (it loads its models): stored before the stop, so the
    # stop lasts seconds, well within the session timeout.
    wait_until(lambda: asyncio.run(_members(stack.brokers, stack.group)) == 2, 60, 0.5)
    asyncio.run(_probe(stack.brokers, "warm"))
    stack.workers[0].drain(60)
    return _split(stack, stack.workers[1])


def _stored(stack: Stack, scope: Scope) -> tuple[set[str], int]:
    """Message ids the shared doc store holds for ``scope``, and its BM25 unit count."""
    reader = Settings(data_dir=stack.root / "reader", lexical_backend="opensearch",
                      doc_backend="opensearch", opensearch_url=stack.osmem,
                      opensearch_index_prefix=PREFIX)
    with Memory.open(reader) as memory:
        ids = {m for meta in memory.sessions(scope)
               for t in memory.raw(scope, meta.session_id) for m in t.source_ids}
        return ids, memory.lexical.count(scope)


def _batch(user: str, sessions: list[str], n: int) -> list[Any]:
    return [event(user, sid, f"b{n}:{sid}:{i}", "user" if i % 2 else "assistant",
                  f"batch {n} of {sid}, message {i}: the kayak trip is on Sunday.")
            for sid in sessions for i in (1, 2)]


def test_a_delete_through_one_replica_is_not_undone_by_a_stalled_worker(
        stack: Stack, split: tuple[set[int], set[int]]) -> None:
    """Batches through replica a, the delete through replica b, the other worker stopped:
    what a acknowledged before the delete stays gone, and a batch racing the delete through
    a is there whole or not at all (no routing by user, no lock shared by the replicas)."""
    stalled, running = stack.workers[1], stack.workers[0]
    mine, theirs = split
    # The user's control partition (and, with ADR 0005, all its turns) is the running
    # worker's; under the old session keys ``far`` was on the stalled worker's partitions.
    user = _pick(f"{USER}-", lambda u: f"{TENANT}/{u}/", theirs)
    near = _pick("near", lambda s: f"{TENANT}/{user}/{s}", theirs)
    far = _pick("far", lambda s: f"{TENANT}/{user}/{s}", mine)
    scope = Scope(tenant_id=TENANT, user_id=user)
    racing = {e.message_id for e in _batch(user, [near, far], 2)}
    running.drain(60)

    async def scenario() -> Any:
        a, b = (AsyncMemoryClient(addr, api_key=stack.key) for addr in stack.replicas)
        async with a, b:
            await a.ingest(_batch(user, [near, far], 0))
            wait = asyncio.get_running_loop().run_in_executor
            await wait(None, wait_until, lambda: len(_stored(stack, scope)[0]) == 4, 30, 0.2)
            assert stalled.proc is not None
            os.kill(stalled.proc.pid, signal.SIGSTOP)
            # Acknowledged (at the broker) through replica a, queued, then deleted through b
            # while one more batch of both sessions goes through a.
            await a.ingest(_batch(user, [near, far], 1))
            receipt, _ = await asyncio.gather(b.delete(scope),
                                              a.ingest(_batch(user, [near, far], 2)))
            assert _state(stalled) == "T"  # still stopped: the delete did not wait for it
            return receipt

    try:
        receipt = asyncio.run(scenario())
    finally:
        if stalled.proc is not None:
            os.kill(stalled.proc.pid, signal.SIGCONT)
    assert receipt.complete and sum(receipt.removed.values()) > 0, receipt
    for w in stack.workers:  # past every worker's lag, the resumed one's too
        w.drain(60)
    ids, units = _stored(stack, scope)
    assert not ids - racing, f"turns acknowledged before the delete came back: {ids - racing}"
    assert ids in (set(), racing), f"the batch racing the delete was split: {sorted(ids)}"
    assert (units == 0) == (not ids), (units, ids)  # BM25 agrees with the documents
    time.sleep(1.0)  # "ever": a late write of either worker would show now
    assert _stored(stack, scope) == (ids, units)
    assert stalled.alive() and running.alive()


def _state(worker: WorkerProc) -> str:
    """The process state letter from /proc (``T``: stopped)."""
    assert worker.proc is not None
    stat = Path(f"/proc/{worker.proc.pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


def _turn_ids(stack: Stack, scope: Scope) -> tuple[Counter[str], int, int]:
    """How many times each message id is stored for ``scope``, in how many raw turns, and
    the doc store's own count of them."""
    reader = Settings(data_dir=stack.root / "reader", lexical_backend="opensearch",
                      doc_backend="opensearch", opensearch_url=stack.osmem,
                      opensearch_index_prefix=PREFIX)
    with Memory.open(reader) as memory:
        turns = [t for meta in memory.sessions(scope) for t in memory.raw(scope, meta.session_id)]
        ids = Counter(m for t in turns for m in t.source_ids)
        return ids, len(turns), memory.docs.count_turns(scope)


def test_a_delete_holds_when_the_worker_of_the_user_is_killed(
        stack: Stack, split: tuple[set[int], set[int]]) -> None:
    """The worker that owns the user's partition is killed (SIGKILL) with a batch of the
    user queued for it, and the group hands its partitions to the other worker. A delete
    through replica a, acknowledged once the survivor applied it, is still not undone by a
    turn acknowledged before it (a batch racing it through b is whole or gone), and every
    turn of another user on the same worker, acknowledged through either replica before or
    after the kill, is stored exactly once.

    Runs after the stall test: it ends with one worker (w2, the survivor) in the group.
    """
    killed, survivor = stack.workers
    _, owned = split  # the partitions of w1, the worker killed here
    assert killed.alive() and survivor.alive()
    wait_until(lambda: asyncio.run(_members(stack.brokers, stack.group)) == 2, 30, 0.5)
    user = _pick(f"{USER}-gone-", lambda u: f"{TENANT}/{u}/", owned)
    other = _pick(f"{USER}-kept-", lambda u: f"{TENANT}/{u}/", owned)
    gone, kept = (Scope(tenant_id=TENANT, user_id=u) for u in (user, other))
    sessions = ["s1", "s2"]
    racing = {e.message_id for e in _batch(user, sessions, 2)}
    expected = Counter(e.message_id for n in range(5) for e in _batch(other, sessions, n))

    async def scenario() -> tuple[Any, float]:
        a, b = (AsyncMemoryClient(addr, api_key=stack.key) for addr in stack.replicas)
        async with a, b:
            await b.ingest(_batch(user, sessions, 0) + _batch(other, sessions, 0))
            wait = asyncio.get_running_loop().run_in_executor
            await wait(None, wait_until, lambda: len(_stored(stack, gone)[0]) == 4
                       and len(_stored(stack, kept)[0]) == 4, 30, 0.1)
            assert killed.proc is not None
            # Stopped first so the batch acknowledged next is certainly queued for it (not
            # stored) when it dies: the survivor has to store it before applying the delete.
            os.kill(killed.proc.pid, signal.SIGSTOP)
            stopped = time.monotonic()
            await b.ingest(_batch(user, sessions, 1) + _batch(other, sessions, 1))
            killed.kill()
            receipt, _ = await asyncio.gather(
                a.delete(gone), b.ingest(_batch(user, sessions, 2) + _batch(other, sessions, 2)))
            took = time.monotonic() - stopped
            await b.ingest(_batch(other, sessions, 3))  # after the kill and the delete
            await a.ingest(_batch(other, sessions, 4))
            return receipt, took

    try:
        receipt, took = asyncio.run(scenario())
    finally:
        if killed.proc is not None:  # a failure before the kill: not left stopped
            os.kill(killed.proc.pid, signal.SIGCONT)
    assert receipt.complete and sum(receipt.removed.values()) > 0, receipt
    # Only the owner of the user's partitions applies the delete. Held by the killed worker,
    # they move once the group drops it, a session timeout after its last heartbeat (the
    # survivor applies a delete within a second or two): half of that proves the move.
    assert took > float(SESSION_TIMEOUT_S) / 2, (
        f"the delete was applied {took:.1f}s after the stop, before the group could drop the "
        f"killed worker: the user's partitions were not the killed worker's")
    survivor.drain(60)  # past the survivor's lag: it owns every partition now

    def check() -> tuple[set[str], int, Counter[str], int]:
        ids, units = _stored(stack, gone)
        assert not ids - racing, f"turns acknowledged before the delete came back: {ids - racing}"
        assert ids in (set(), racing), f"the batch racing the delete was split: {sorted(ids)}"
        assert (units == 0) == (not ids), (units, ids)  # BM25 agrees with the documents
        stored, turns, counted = _turn_ids(stack, kept)
        assert stored == expected, (f"lost: {sorted(expected - stored)}, "
                                    f"duplicated: {sorted(stored - expected)}")
        assert counted == turns, (counted, turns)  # no turn document outside its session
        return ids, units, stored, turns

    first = check()
    # "Ever": the survivor stores and commits a probe on every partition, produced after
    # everything above; a late write (a replay, a held window) would show by then.
    asyncio.run(_probe(stack.brokers, "after-kill"))
    survivor.drain(60)
    assert check() == first
    assert survivor.alive() and not killed.alive()
