"""Poison records on the turns topic never stop the worker (issue 16).

One worker run over the shared broker (shared with test_dlq_and_deletes, see
one_worker.py; its 200-character content limit changes nothing here): between
good turns of one session sit a turn dated year 1 (``.timestamp()`` used to
raise on it), a value nested 100,000 levels deep (``RecursionError`` in the JSON
decoder) and a 1 MB value (its dead letter, base64 of the whole value, used to
exceed the producer's request size). Each must land in the DLQ with its reason,
the worker must still be running, and the turns after them must be stored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from memstrata.memory import Memory
from memstrata.model import Scope
from memstrata.wire import user_key
from streams import topics
from memstrata.wire import TurnEvent
from streams.events import DeadLetter, utcnow
from streams.produce import StreamProducer
from tests.integration.streams.one_worker import Part, register

pytestmark = pytest.mark.integration

ROB = Scope(tenant_id="t-poison", user_id="rob")
#: rob's key (ADR 0005: every turn of a user is keyed ``tenant/user/``): the poison records
#: sit between his good turns on one partition.
KEY = user_key(ROB.tenant_id, ROB.user_id)


def turn(n: int, text: str, role: str = "user") -> TurnEvent:
    return TurnEvent(tenant_id=ROB.tenant_id, user_id=ROB.user_id, session_id="r1",
                     message_id=f"r1#{n}", role=role, content=text, ts=utcnow())  # type: ignore[arg-type]


YEAR_ONE = json.dumps({**json.loads(turn(2, "From the year one.").to_bytes()),
                       "ts": "0001-01-01T00:00:00"}).encode()
NESTED = b"[" * 100_000
HUGE = json.dumps({**json.loads(turn(3, "big").to_bytes()),
                   "content": "x" * 1_000_000}).encode()[:1_000_000]


async def _send(p: StreamProducer) -> None:
    await p.send_turn(turn(1, "I collect old maps of Lisbon."))
    for value in (YEAR_ONE, NESTED, HUGE):
        await p.send_raw(topics.TURNS, value, key=KEY)
    await p.send_turn(turn(4, "My favourite map is from 1755.", "assistant"))
    await p.send_turn(turn(5, "I keep them in a cedar chest."))


def _read(memory: Memory, dlq: list[Any]) -> dict[str, Any]:
    dead = [DeadLetter.model_validate_json(r.value) for r in dlq if r.key == KEY]
    stored = [m.source_id for t in memory.raw(ROB, "r1") for m in t.messages]
    return {"dead": {d.offset: d for d in dead}, "stored": stored}


register(Part("poison", _send, _read))


@pytest.fixture(scope="module")
def run(one_worker_run: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The worker run (tests/integration/streams/one_worker.py): alive, dead, stored, log."""
    return one_worker_run["poison"]


def _letter(run: dict[str, Any], value: bytes) -> DeadLetter:
    for d in run["dead"].values():
        if d.value_sha256 == hashlib.sha256(value).hexdigest():
            return d  # type: ignore[no-any-return]
    raise AssertionError(f"no dead letter for the value; got {list(run['dead'].values())}")


def test_the_worker_keeps_running_and_stores_the_turns_after_the_poison(
        run: dict[str, Any]) -> None:
    assert run["alive"], run["log"][-3000:]
    assert KEY == b"t-poison/rob/" and len(run["dead"]) == 3
    assert len({d.partition for d in run["dead"].values()}) == 1  # rob's one partition
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
