"""Poison records on the turns topic never stop the worker (issue 16).

One worker run over the shared broker: between good turns of one session sit
a turn dated year 1 (``.timestamp()`` used to raise on it), a value nested
100,000 levels deep (``RecursionError`` in the JSON decoder) and a 1 MB value
(its dead letter, base64 of the whole value, used to exceed the producer's
request size). Each must land in the DLQ with its reason, the worker must
still be running, and the turns after them must be stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.memory import Memory
from memstrata.model import Scope
from streams import topics
from streams.broker import EmbeddedBroker
from streams.events import DeadLetter, TurnEvent, event_key, utcnow
from streams.produce import StreamProducer
from tests.integration.streams.harness import WorkerProc, read_topic, start_group_at_end

pytestmark = pytest.mark.integration

ROB = Scope(tenant_id="t-poison", user_id="rob")
KEY = event_key(ROB.tenant_id, ROB.user_id, "r1")


def turn(n: int, text: str, role: str = "user") -> TurnEvent:
    return TurnEvent(tenant_id=ROB.tenant_id, user_id=ROB.user_id, session_id="r1",
                     message_id=f"r1#{n}", role=role, content=text, ts=utcnow())  # type: ignore[arg-type]


YEAR_ONE = json.dumps({**json.loads(turn(2, "From the year one.").to_bytes()),
                       "ts": "0001-01-01T00:00:00"}).encode()
NESTED = b"[" * 100_000
HUGE = json.dumps({**json.loads(turn(3, "big").to_bytes()),
                   "content": "x" * 1_000_000}).encode()[:1_000_000]


@pytest.fixture(scope="module")
def run(broker: EmbeddedBroker,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("poison")
    group = "memstrata-test-poison"
    start_group_at_end(broker.address, group)
    worker = WorkerProc(broker.address, tmp / "data", group, tmp).start()

    async def produce() -> None:
        async with StreamProducer(broker.address) as p:
            await p.send_turn(turn(1, "I collect old maps of Lisbon."))
            for value in (YEAR_ONE, NESTED, HUGE):
                await p.send_raw(topics.TURNS, value, key=KEY)
            await p.send_turn(turn(4, "My favourite map is from 1755.", "assistant"))
            await p.send_turn(turn(5, "I keep them in a cedar chest."))
            await p.flush()

    try:
        asyncio.run(produce())
        worker.drain()
        alive = worker.alive()
    finally:
        worker.stop()
    dead = [DeadLetter.model_validate_json(r.value)
            for r in read_topic(broker.address, topics.DLQ) if r.key == KEY]
    with Memory.open(Settings(data_dir=tmp / "data")) as memory:
        stored = [m.source_id for t in memory.raw(ROB, "r1") for m in t.messages]
    yield {"alive": alive, "dead": {d.offset: d for d in dead}, "stored": stored,
           "log": worker.log_text}


def _letter(run: dict[str, Any], value: bytes) -> DeadLetter:
    for d in run["dead"].values():
        if d.value_sha256 == hashlib.sha256(value).hexdigest():
            return d  # type: ignore[no-any-return]
    raise AssertionError(f"no dead letter for the value; got {list(run['dead'].values())}")


def test_the_worker_keeps_running_and_stores_the_turns_after_the_poison(
        run: dict[str, Any]) -> None:
    assert run["alive"], run["log"][-3000:]
    assert run["stored"] == ["r1#1", "r1#4", "r1#5"]
    assert "Traceback" not in run["log"], run["log"][-3000:]


def test_a_year_one_timestamp_is_a_bad_field(run: dict[str, Any]) -> None:
    d = _letter(run, YEAR_ONE)
    assert d.reason == "bad_field" and "event.ts:" in d.detail and "1900-01-01" in d.detail
    assert d.original() == YEAR_ONE and not d.truncated


def test_json_nested_too_deeply_is_not_json(run: dict[str, Any]) -> None:
    d = _letter(run, NESTED)
    assert d.reason == "not_json" and "nested too deeply" in d.detail
    assert d.original() == NESTED


def test_a_1mb_value_is_dead_lettered_cut_with_its_size_and_digest(run: dict[str, Any]) -> None:
    d = _letter(run, HUGE)
    assert d.reason == "too_large" and "MEMSTRATA_STREAM_MAX_EVENT_BYTES" in d.detail
    assert d.truncated and d.value_size == len(HUGE) == 1_000_000
    assert HUGE.startswith(d.original()) and 500_000 < len(d.original()) < len(HUGE)
