"""The batch processor over a MemoryWriter double: batching, DLQ, ordering, idle close."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from memstrata.limits import TurnLimits
from memstrata.model import Scope
from memstrata.roles import AppendReport
from streams import topics
from memstrata.wire import ControlEvent, TurnEvent
from streams.events import utcnow
from streams.processor import Processor
from streams.records import Record
from streams.sessions import session_key
from streams.settings import StreamSettings
from tests.unit.streams.doubles import RecordingWriterDouble

MAYA = Scope(tenant_id="acme", user_id="maya")
TURNS = TurnLimits()


def key(sid: str) -> str:
    """The session table's key of maya's session ``sid``."""
    return session_key(MAYA, sid)


def turn(sid: str, n: int, role: str = "user", content: str | None = None) -> TurnEvent:
    return TurnEvent(tenant_id="acme", user_id="maya", session_id=sid, message_id=f"{sid}#{n}",
                     role=role, content=content or f"message {n}", ts=utcnow())  # type: ignore[arg-type]


def records(*values: bytes | TurnEvent, partition: int = 0, start: int = 0) -> list[Record]:
    out = []
    for i, v in enumerate(values):
        if isinstance(v, TurnEvent):
            out.append(Record(topics.TURNS, partition, start + i, v.key, v.to_bytes()))
        else:
            out.append(Record(topics.TURNS, partition, start + i, None, v))
    return out


def run(coro):
    return asyncio.run(coro)


def test_a_batch_is_one_append_per_session_and_one_flush() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    out = run(p.handle_turns(records(turn("a", 1), turn("b", 1), turn("a", 2, "assistant"))))
    assert [c for c in w.calls if c[0] == "append"] == [
        ("append", ("a", ["a#1", "a#2"])), ("append", ("b", ["b#1"]))]
    assert w.flushes == 1
    assert {n.session_id for n in out.l0} == {"a", "b"} and not out.dead
    assert p.metrics.events_in.labels(topics.TURNS)._value.get() == 3


def test_poison_events_go_to_the_dlq_and_the_rest_is_written() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    bad_role = json.dumps({**json.loads(turn("a", 9).to_bytes()), "role": "bot"}).encode()
    out = run(p.handle_turns(records(turn("a", 1), b"{oops", bad_role, turn("a", 2, "assistant"))))
    assert [d.reason for d in out.dead] == ["not_json", "bad_role"]
    assert [d.offset for d in out.dead] == [1, 2]
    assert out.dead[0].original() == b"{oops"
    assert w.messages[(MAYA, "a")][-1].source_id == "a#2"
    assert p.metrics.dlq_events.labels("not_json")._value.get() == 1


#: Store retries without waiting, so the retry tests take no time.
QUICK = StreamSettings(store_attempts=3, store_refused_attempts=2, store_backoff_s=0,
                       store_backoff_max_s=0)


def test_a_session_the_writer_refuses_is_dead_lettered_alone() -> None:
    w = RecordingWriterDouble(fail_on="poison")
    p = Processor(w, QUICK, turns=TURNS)
    out = run(p.handle_turns(records(turn("a", 1), turn("b", 1, content="poison"), turn("c", 1))))
    assert [(d.reason, d.offset) for d in out.dead] == [("store_failed", 1)]
    assert "cannot index" in out.dead[0].detail and "2 attempts" in out.dead[0].detail
    assert set(k[1] for k in w.messages) == {"a", "c"}


def test_duplicates_change_nothing() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    run(p.handle_turns(records(turn("a", 1), turn("a", 2, "assistant"))))
    run(p.handle_turns(records(turn("a", 1), turn("a", 2, "assistant"), start=2)))
    assert [m.source_id for m in w.messages[(MAYA, "a")]] == ["a#1", "a#2"]


def control(type_: str, sid: str | None, after: dict[int, int]) -> Record:
    ev = ControlEvent(type=type_, tenant_id="acme", user_id="maya", session_id=sid,  # type: ignore[arg-type]
                      ts=utcnow(), after=after)
    return Record(topics.CONTROL, 0, 0, ev.key, ev.to_bytes())


def test_a_delete_waits_for_the_turns_it_follows() -> None:
    async def scenario() -> list[tuple[str, object]]:
        w = RecordingWriterDouble()
        p = Processor(w, StreamSettings(control_wait_s=5), turns=TURNS)
        delete = asyncio.create_task(p.handle_control(control("delete_session", "a", {0: 2})))
        await asyncio.sleep(0.05)
        assert not delete.done()  # turns 0 and 1 of partition 0 are not stored yet
        await p.handle_turns(records(turn("a", 1), turn("a", 2, "assistant")))
        await delete
        await p.handle_turns(records(turn("a", 3), start=2))  # after the delete: new data
        assert [m.source_id for m in w.messages[(MAYA, "a")]] == ["a#3"]
        return w.calls

    calls = run(scenario())
    assert [c[0] for c in calls] == ["append", "delete", "append"]


def test_a_control_for_a_partition_owned_elsewhere_does_not_wait() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(control_wait_s=30), turns=TURNS,
                  owned=lambda part: part != 5)
    run(p.handle_control(control("delete_user", None, {5: 100})))
    assert w.calls == [("delete", ("acme/maya", None))]


def test_idle_sessions_are_closed_once() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(idle_s=10), turns=TURNS)
    run(p.handle_turns(records(turn("a", 1))))
    assert p.sessions[key("a")]["provisional"] == [1]
    assert run(p.close_idle(now=p.sessions[key("a")]["last"] + 5)) == []
    notes = run(p.close_idle(now=p.sessions[key("a")]["last"] + 11))
    assert [n.cause for n in notes] == ["close"] and notes[0].provisional == []
    assert key("a") not in p.sessions  # closed: it left the table
    assert p.metrics.provisional_replaced._value.get() == 1
    assert run(p.close_idle(now=10**12)) == []  # closed once
    assert [c[0] for c in w.calls] == ["append", "close"]


def test_delete_user_forgets_the_cached_sessions() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    run(p.handle_turns(records(turn("a", 1), turn("b", 1))))
    run(p.handle_control(control("delete_user", None, {})))
    assert dict(p.sessions) == {}


def test_turns_stored_before_a_delete_but_produced_after_it_are_written_back() -> None:
    """Two topics: the worker may store a1#3 (offset 2) before it reads the delete (after=2)."""
    later = records(turn("a", 1), turn("a", 2, "assistant"), turn("a", 3))

    async def replay(ranges: dict[int, tuple[int, int]]) -> list[Record]:
        assert ranges == {0: (2, 3)}
        return [r for r in later if ranges[0][0] <= r.offset < ranges[0][1]]

    async def scenario() -> RecordingWriterDouble:
        w = RecordingWriterDouble()
        p = Processor(w, StreamSettings(control_wait_s=5), turns=TURNS, replay=replay)
        await p.handle_turns(later)
        out = await p.handle_control(control("delete_session", "a", {0: 2}))
        assert [n.session_id for n in out.l0] == ["a"]
        return w

    w = run(scenario())
    assert [m.source_id for m in w.messages[(MAYA, "a")]] == ["a#3"]
    assert [c[0] for c in w.calls] == ["append", "delete", "append"]


def test_a_lagging_partition_is_waited_for_while_it_moves() -> None:
    from streams.progress import TurnProgress

    async def scenario() -> tuple[bool, bool]:
        progress = TurnProgress()

        async def feed() -> None:
            for off in range(1, 11):
                await asyncio.sleep(0.1)
                await progress.advance(0, off)

        # Steps of 0.1 s against a 0.6 s stall timeout: half a second of slack for a
        # loaded machine's scheduling noise (a tighter pair made this flaky).
        feeder = asyncio.create_task(feed())
        moving = await progress.wait({0: 10}, lambda p: True, timeout_s=0.6, poll_s=0.05)
        await feeder
        stalled = await progress.wait({0: 99}, lambda p: True, timeout_s=0.2, poll_s=0.05)
        return moving, stalled

    assert run(scenario()) == (True, False)  # 1 s of progress > 0.6 s timeout: still waited


# -- poison events and store failures (issue 16) ------------------------------------------------

def _with(ev: TurnEvent, **change: object) -> bytes:
    return json.dumps({**json.loads(ev.to_bytes()), **change}).encode()


def test_a_year_one_timestamp_is_dead_lettered_and_the_batch_goes_on() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    year_one = _with(turn("a", 2), ts="0001-01-01T00:00:00")
    out = run(p.handle_turns(records(turn("a", 1), year_one, turn("a", 3))))
    assert [(d.reason, d.offset) for d in out.dead] == [("bad_field", 1)]
    assert "event.ts:" in out.dead[0].detail
    assert [m.source_id for m in w.messages[(MAYA, "a")]] == ["a#1", "a#3"]


def test_a_huge_poison_value_makes_a_dead_letter_that_fits_the_producer() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS, dead_letter_max_bytes=100_000)
    out = run(p.handle_turns(records(b"x" * 1_000_000, turn("a", 1))))
    [dead] = out.dead
    assert dead.reason == "too_large" and dead.truncated and dead.value_size == 1_000_000
    assert len(dead.to_bytes()) < 100_000
    assert (MAYA, "a") in w.messages


class FlakyWriterDouble(RecordingWriterDouble):
    """Raises ``error`` on the first ``failures`` appends (every append when None)."""

    def __init__(self, error: BaseException, failures: int | None) -> None:
        super().__init__()
        self.error, self.failures, self.attempts = error, failures, 0

    def append_messages(self, meta, messages):
        self.attempts += 1
        if self.failures is None or self.attempts <= self.failures:
            raise self.error
        return super().append_messages(meta, messages)


def test_a_store_that_hiccups_is_retried_and_nothing_is_lost() -> None:
    w = FlakyWriterDouble(ConnectionError("store restarting"), failures=2)
    p = Processor(w, QUICK, turns=TURNS)
    out = run(p.handle_turns(records(turn("a", 1), turn("b", 1))))
    assert not out.dead and w.attempts == 4  # two failed tries of a, then a and b
    assert set(k[1] for k in w.messages) == {"a", "b"}


def test_a_store_that_stays_down_stops_with_the_handled_prefix_committable() -> None:
    from streams.outage import StoreUnavailable

    w = FlakyWriterDouble(TimeoutError("store down"), failures=None)
    p = Processor(w, QUICK, turns=TURNS)
    batch = records(b"{oops", turn("a", 1), partition=0) + records(b"[1]", partition=1, start=7)
    try:
        run(p.handle_turns(batch))
    except StoreUnavailable as down:
        assert "3 attempts" in str(down) and "store down" in str(down)
        # Partition 0: the bad record before the unstored turn; partition 1: all of it.
        assert down.done == {0: 1, 1: 8}
        assert sorted((d.partition, d.offset) for d in down.outbox.dead) == [(0, 0), (1, 7)]
    else:
        raise AssertionError("an unreachable store must stop the worker")
    assert w.attempts == 3


def test_a_dead_letter_the_producer_still_refuses_is_sent_without_its_value() -> None:
    from streams.events import Invalid
    from streams.outbox import Outbox, publish

    class TooLarge(Exception):
        pass

    sent: list[tuple[str, bytes, bytes | None]] = []

    async def send(topic: str, value: bytes, key: bytes | None) -> None:
        if len(value) > 1000:
            raise TooLarge(len(value))
        sent.append((topic, value, key))

    dead = Invalid("too_large", "big").dead_letter(topic=topics.TURNS, partition=0, offset=3,
                                                  key=b"k", value=b"v" * 5000)
    run(publish(Outbox(dead=[dead]), send, too_large=(TooLarge,)))
    [(topic, value, key)] = sent
    from streams.events import DeadLetter

    back = DeadLetter.model_validate_json(value)
    assert topic == topics.DLQ and back.truncated and back.value_size == 5000
    assert back.value_b64 == "" and back.offset == 3


def test_store_client_connection_errors_count_as_an_unreachable_store() -> None:
    import httpx
    from opensearchpy.exceptions import ConnectionTimeout

    from streams.outage import is_transient

    class WrapperDouble(Exception):
        """Stands in for qdrant-client's ResponseHandlingException (its import is slow)."""

    def wrapped(inner: Exception) -> BaseException:
        try:
            try:
                raise inner
            except Exception as exc:
                raise WrapperDouble(exc)  # noqa: B904 - as the Qdrant client does: no "from"
        except WrapperDouble as outer:
            return outer

    assert is_transient(wrapped(httpx.ConnectError("connection refused")))
    assert is_transient(ConnectionTimeout("TIMEOUT", "read timed out", None))
    assert is_transient(TimeoutError()) and is_transient(ConnectionRefusedError())
    assert not is_transient(ValueError("vector has the wrong size"))
    assert not is_transient(wrapped(ValueError("bad payload")))


def test_on_an_outage_the_handled_records_are_acked_after_their_notices_then_committed() -> None:
    from types import SimpleNamespace

    from streams.outage import StoreUnavailable, settle_outage
    from streams.outbox import Outbox

    calls: list[tuple[str, object]] = []

    def event(partition: int, offset: int) -> SimpleNamespace:
        return SimpleNamespace(message=SimpleNamespace(topic=topics.TURNS, partition=partition,
                                                       offset=offset))

    async def deliver(out: Outbox) -> None:
        calls.append(("deliver", len(out.dead)))

    async def ack(e: SimpleNamespace) -> None:
        calls.append(("ack", (e.message.partition, e.message.offset)))

    async def commit() -> None:
        calls.append(("commit", None))

    down = StoreUnavailable("store down", Outbox(), {0: 12})
    events = [event(0, 10), event(0, 11), event(0, 12), event(1, 4)]
    run(settle_outage(down, events, deliver=deliver, ack=ack, commit=commit))
    assert calls == [("deliver", 0), ("ack", (0, 10)), ("ack", (0, 11)),
                     ("commit", None), ("commit", None)]


def old(sid: str, n: int, role: str = "user", content: str | None = None) -> TurnEvent:
    """A turn event produced a minute ago: read from a backlog."""
    ev = turn(sid, n, role, content)
    return ev.model_copy(update={"ts": ev.ts - timedelta(seconds=60)})


def test_a_full_batch_of_fresh_events_is_a_burst_not_a_backlog() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
    out = run(p.handle_turns(records(turn("a", 1), turn("b", 1))))
    assert not p.held and {n.session_id for n in out.l0} == {"a", "b"}


def test_a_full_batch_holds_open_windows_and_a_short_one_builds_them() -> None:
    """Behind the topic (the batch came full), open windows wait for the next messages;
    caught up (a short batch), every held window is built, its session in the batch or not."""
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=3), turns=TURNS)
    out = run(p.handle_turns(records(old("a", 1), old("b", 1), old("c", 1))))
    assert ("hold", ["a", "b", "c"]) in w.calls
    assert not out.l0 and set(k[1] for k in p.held) == {"a", "b", "c"}
    assert p.sessions[key("a")]["held"] == [1]
    assert p.metrics.held_sessions._value.get() == 3
    assert p.metrics.freshness_seconds._sum.get() == 0
    out = run(p.handle_turns(records(old("a", 2, "assistant"), start=3)))
    assert {n.session_id: n.turns for n in out.l0} == {"a": [1], "b": [1], "c": [1]}
    assert not p.held and p.sessions[key("b")]["held"] == []
    assert p.metrics.held_sessions._value.get() == 0


def test_held_windows_are_built_when_due_and_before_their_closes_in_one_write() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2, hold_max_s=30), turns=TURNS)
    run(p.handle_turns(records(old("a", 1), old("b", 1))))
    clock = p.held[(MAYA, "a")].since
    p._last_batch = clock
    assert run(p.build_held(clock + 0.5)) == []  # neither quiet (1 s) nor due (30 s)
    # Due: built even though batches still come (not quiet).
    p._last_batch = clock + 30.5
    assert [n.session_id for n in run(p.build_held(clock + 31))] == ["a", "b"]
    assert not p.held
    # Quiet: no batch for half of freshness_s (caught up) builds what is held.
    run(p.handle_turns(records(old("a", 2, "assistant"), old("b", 2, "assistant"), start=4)))
    assert len(p.held) == 2
    assert len(run(p.build_held(p._last_batch + 1.1))) == 2 and not p.held
    # Held again, then both closed by one burst of closes: one build, then the closes.
    run(p.handle_turns(records(old("a", 3), old("b", 3), start=2)))
    assert set(k[1] for k in p.held) == {"a", "b"}
    w.calls.clear()
    run(p.handle_controls([control("close_session", "a", {}), control("close_session", "b", {})]))
    assert [c[0] for c in w.calls] == ["append", "append", "close", "close"]
    assert not p.held


def test_hold_max_counts_from_a_held_sessions_last_message() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2, hold_max_s=30), turns=TURNS)
    run(p.handle_turns(records(old("a", 1), old("b", 1))))
    first = p.held[(MAYA, "a")].since
    for held in p.held.values():
        held.since -= 10  # held 10 s ago
    run(p.handle_turns(records(old("a", 2, "assistant"), old("c", 1), start=2)))
    p._last_batch = first + 25
    # b went quiet 35 s ago: due; a sent again since: not due although held 35 s.
    assert [n.session_id for n in run(p.build_held(first + 25))] == ["b"]
    assert set(k[1] for k in p.held) == {"a", "c"}


def test_hold_max_zero_indexes_every_batch_as_before() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2, hold_max_s=0), turns=TURNS)
    out = run(p.handle_turns(records(old("a", 1), old("b", 1))))
    assert not any(c[0] == "hold" for c in w.calls) and not p.held
    assert {n.session_id for n in out.l0} == {"a", "b"}


def test_held_sessions_of_a_partition_that_moved_are_left_to_its_new_owner() -> None:
    owned = {0, 1}
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS, owned=lambda part: part in owned)
    run(p.handle_turns(records(old("a", 1), old("b", 1, content="b"), partition=1)))
    assert p.sessions[key("a")]["partition"] == 1 and len(p.held) == 2
    owned.discard(1)  # revoked: the other worker reads the session table and builds them
    assert run(p.build_held(p._last_batch + 5)) == [] and not p.held
    # A worker that owns the partition and finds only the table's note builds them.
    q = Processor(w, StreamSettings(batch_max=2), turns=TURNS, sessions=p.sessions)
    assert {n.session_id for n in run(q.build_held())} == {"a", "b"}
    assert p.sessions[key("a")]["held"] == []


def test_the_timer_does_not_take_a_long_batch_for_a_quiet_worker() -> None:
    """A batch that takes longer than half of freshness_s is not a pause in the input:
    the timer looks after the batch in hand, which just ended."""
    async def scenario() -> int:
        w = RecordingWriterDouble()
        p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
        await p.handle_turns(records(old("a", 1), old("b", 1)))
        async with p._order:
            timer = asyncio.create_task(p.build_held(p._last_batch + 5))
            await asyncio.sleep(0.01)
            p._last_batch += 5
        return len(await timer) + len(p.held)
    assert run(scenario()) == 2  # nothing built, both still held


def test_a_state_that_only_got_older_is_not_rewritten_but_still_counts_for_idle() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=1, idle_s=100), turns=TURNS)
    run(p.handle_turns(records(old("a", 1))))
    first = p.sessions[key("a")]["last"]
    run(p.handle_turns(records(old("a", 2, "assistant"), start=1)))  # held again, as it was
    assert p.sessions[key("a")]["last"] == first  # no changelog record for the time alone
    seen = p.open_sessions.last(key("a"))
    assert seen is not None
    assert seen >= first
    # Idle is counted from the last message, not from the table's older time.
    p.sessions[key("a")] = {**p.sessions[key("a")], "last": seen - 50}
    assert all(n.cause != "close" for n in run(p.close_idle(now=seen + 99)))
    assert [n.cause for n in run(p.close_idle(now=seen + 101))] == ["close"]


def test_a_full_batch_of_fresh_events_with_another_batch_waiting_is_a_backlog() -> None:
    """Fresh events but a full batch more already in the topic (a worker that just started,
    a burst bigger than a batch): the open windows wait, as when the events are old."""
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
    out = run(p.handle_turns(records(turn("a", 1), turn("b", 1)), waiting=1))
    assert not p.held and {n.session_id for n in out.l0} == {"a", "b"}  # less than a batch
    out = run(p.handle_turns(records(turn("c", 1), turn("d", 1), start=2), waiting=2))
    assert not out.l0 and set(k[1] for k in p.held) == {"c", "d"}
    out = run(p.handle_turns(records(turn("e", 1), start=4), waiting=0))  # caught up
    assert {n.session_id for n in out.l0} == {"c", "d", "e"} and not p.held


def test_a_short_batch_with_a_full_batch_waiting_behind_it_holds_too() -> None:
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=4), turns=TURNS)
    out = run(p.handle_turns(records(turn("a", 1)), waiting=4))
    assert not out.l0 and set(k[1] for k in p.held) == {"a"}


def test_a_held_window_that_grows_is_not_rewritten_to_the_session_table() -> None:
    """The table keeps the first held turn: a held session's next messages change nothing there."""
    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(batch_max=2), turns=TURNS)
    run(p.handle_turns(records(old("a", 1), old("b", 1))))
    first = p.sessions[key("a")]
    assert first["held"] == [1]
    # The held window grows by a turn (what Memory reports; the double holds one turn).
    grown = AppendReport(scope=MAYA, session_id="a", turns_written=[2], held=[1, 2])
    p._noted(grown, "append", first["last"] + 1)
    assert p.sessions[key("a")] is first  # not rewritten: only the time moved
    built = AppendReport(scope=MAYA, session_id="a", units_written=[1, 2], unit_ids=["u1", "u2"])
    p._noted(built, "append", first["last"] + 2)
    assert p.sessions[key("a")]["held"] == []  # built: the table says so


def test_freshness_counts_from_when_the_broker_got_the_event_not_from_its_own_time() -> None:
    """Issue 31: a backfill through the API (events dated days ago) was observed as days
    stale and tripped the stale-index alert; freshness now counts from the record's
    timestamp (when the broker received it)."""
    import time as clock

    w = RecordingWriterDouble()
    p = Processor(w, StreamSettings(), turns=TURNS)
    old = TurnEvent(tenant_id="acme", user_id="maya", session_id="bf", message_id="bf#1",
                    role="user", content="An old note.",
                    ts=utcnow() - timedelta(days=3))  # type: ignore[arg-type]
    rec = Record(topics.TURNS, 0, 0, old.key, old.to_bytes(), received=clock.time() - 1.0)
    run(p.handle_turns([rec]))
    total, count = (p.metrics.freshness_seconds._sum.get(),
                    sum(b.get() for b in p.metrics.freshness_seconds._buckets))
    assert count == 1 and 0.5 < total < 60, (total, count)
