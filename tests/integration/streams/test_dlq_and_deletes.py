"""Poison events go to the DLQ with their reason; deletes are ordered after the turns they delete.

One worker run (shared with test_poison, see one_worker.py): bad events sit
between good ones of one session; a session and a user are deleted right after
their turns are produced (the worker must not let the delete overtake them), and
a turn for the deleted session produced after the delete is indexed as new data.
"""

from __future__ import annotations

import base64
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

POISON = Scope(tenant_id="t-dlq", user_id="pat")
ANA = Scope(tenant_id="t-del", user_id="ana")
BEN = Scope(tenant_id="t-del", user_id="ben")


def turn(scope: Scope, sid: str, n: int, text: str, role: str = "user") -> TurnEvent:
    return TurnEvent(tenant_id=scope.tenant_id, user_id=scope.user_id, session_id=sid,
                     message_id=f"{sid}#{n}", role=role, content=text, ts=utcnow())  # type: ignore[arg-type]


def bad(**change: Any) -> bytes:
    d = json.loads(turn(POISON, "p1", 99, "bad").to_bytes())
    d.update(change)
    return json.dumps({k: v for k, v in d.items() if v is not None}).encode()


#: The key every turn of pat carries (ADR 0005: ``tenant/user/``), the bad records too, so
#: they sit between pat's good turns on one partition.
KEY = user_key("t-dlq", "pat")
BAD_EVENTS = {
    "not_json": b'{"v": 1, "tenant_id": "t-dlq", ',
    "missing_field": bad(content=None),
    "too_large": bad(content="x" * 300),
    "bad_role": bad(role="system"),
    "bad_id": bad(message_id="has space"),
}


async def _send(p: StreamProducer) -> None:
    await p.send_turn(turn(POISON, "p1", 1, "I keep bees on the roof of my flat."))
    for value in BAD_EVENTS.values():
        await p.send_raw(topics.TURNS, value, key=KEY)
    await p.send_turn(turn(POISON, "p1", 2, "Bees need water nearby.", "assistant"))
    await p.send_turn(turn(POISON, "p1", 3, "They made twelve jars of honey."))
    # Deletes straight after the turns they delete.
    for sid in ("a1", "a2"):
        for n in range(1, 7):
            await p.send_turn(turn(ANA, sid, n, f"Ana {sid} talks about topic {n}.",
                                   "user" if n % 2 else "assistant"))
    for n in range(1, 5):
        await p.send_turn(turn(BEN, "b1", n, f"Ben mentions his garden {n}."))
    await p.control("delete_session", ANA, "a1")
    await p.control("delete_user", BEN)
    # After the delete: new data for the deleted session.
    await p.send_turn(turn(ANA, "a1", 100, "Ana starts over: she now plays cello."))
    await p.control("close_session", ANA, "a1")
    await p.control("close_session", POISON, "p1")


def _read(memory: Memory, dlq: list[Any]) -> dict[str, Any]:
    return {
        "dead": [DeadLetter.model_validate_json(r.value) for r in dlq if r.key == KEY],
        "poison_turns": memory.raw(POISON, "p1"),
        "poison_units": memory.l0(POISON, "p1"),
        "ana_sessions": [m.session_id for m in memory.sessions(ANA)],
        "a1_turns": memory.raw(ANA, "a1"),
        "a1_units": memory.l0(ANA, "a1"),
        "a2_turns": memory.raw(ANA, "a2"),
        "counts": {str(s): (memory.vectors.count(s), memory.lexical.count(s),
                            memory.docs.count_turns(s)) for s in (ANA, BEN)},
        "ben_sessions": memory.sessions(BEN),
    }


#: The worker refuses content over 200 characters (MEMSTRATA_TURN_MAX_CONTENT_CHARS, set in
#: one_worker.ENV), so BAD_EVENTS["too_large"] is refused by that field.
register(Part("dlq", _send, _read))


@pytest.fixture(scope="module")
def run(one_worker_run: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The worker run (tests/integration/streams/one_worker.py), shared with test_poison."""
    return one_worker_run["dlq"]


def test_each_poison_event_is_in_the_dlq_with_its_reason(run: dict[str, Any]) -> None:
    dead = [d for d in run["dead"] if d.topic == topics.TURNS]
    assert sorted(d.reason for d in dead) == sorted(BAD_EVENTS)
    for d in dead:
        assert d.original() == BAD_EVENTS[d.reason]
        assert d.partition >= 0 and d.offset >= 0 and d.detail
        assert d.key_b64 is not None and base64.b64decode(d.key_b64) == KEY == b"t-dlq/pat/"
    # One user, one partition: the poison sits on the partition of the good turns around it.
    assert len({d.partition for d in dead}) == 1
    too_large = next(d for d in dead if d.reason == "too_large")
    assert "200" in too_large.detail and "content" in too_large.detail


def test_the_good_events_around_them_are_indexed(run: dict[str, Any]) -> None:
    turns = run["poison_turns"]
    assert [[m.source_id for m in t.messages] for t in turns] == [["p1#1", "p1#2"], ["p1#3"]]
    assert [u.turn_index for u in run["poison_units"]] == [1, 2]


def test_delete_session_and_delete_user_empty_every_store(run: dict[str, Any]) -> None:
    assert run["ben_sessions"] == []
    assert run["counts"][str(BEN)] == (0, 0, 0)
    # Ana: a2 untouched (6 messages, 3 turns), a1 holds only the turn sent after the delete.
    assert len(run["a2_turns"]) == 3
    assert run["counts"][str(ANA)] == (4, 4, 4)


def test_a_turn_after_the_delete_is_new_data(run: dict[str, Any]) -> None:
    assert sorted(run["ana_sessions"]) == ["a1", "a2"]
    assert [[m.source_id for m in t.messages] for t in run["a1_turns"]] == [["a1#100"]]
    assert [t.index for t in run["a1_turns"]] == [1]
    assert [u.turn_index for u in run["a1_units"]] == [1]
    assert "cello" in run["a1_turns"][0].messages[0].content
