"""Idle sessions close once, the sweep visits only open sessions, keys do not collide (issue 31)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from memstrata.limits import TurnLimits
from memstrata.model import Scope
from memstrata.roles import AppendReport
from streams import topics
from memstrata.wire import ControlEvent, TurnEvent
from streams.events import utcnow
from streams.processor import SWEEP_CHUNK, Processor
from streams.records import Record
from streams.sessions import OpenSessions, parse_key, route_of, session_key
from streams.settings import StreamSettings
from tests.unit.streams.doubles import RecordingWriterDouble

TURNS = TurnLimits()
IDLE_S = 10.0


class MemoryLikeCloseWriterDouble(RecordingWriterDouble):
    """Closes as Memory does when the last window's text is unchanged: nothing rewritten.

    Such a report has no units, so the processor never learns from it that the
    provisional turns became final (what left every session open for good).
    """

    def close_session(self, scope: Scope, session_id: str) -> AppendReport:
        super().close_session(scope, session_id)
        return AppendReport(scope=scope, session_id=session_id)


class CountingTableDouble(dict[str, Any]):
    """Not a Faust table: a dict that counts the writes (each one a changelog record)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def __setitem__(self, key: str, value: Any) -> None:
        self.writes += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.writes += 1
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        if key in self:
            self.writes += 1
        return super().pop(key, *default)


def turn(tenant: str, user: str, sid: str, n: int) -> TurnEvent:
    return TurnEvent(tenant_id=tenant, user_id=user, session_id=sid, message_id=f"{sid}#{n}",
                     role="user", content=f"message {n}", ts=utcnow())  # type: ignore[arg-type]


def records(events: list[TurnEvent], partition: int = 0, start: int = 0) -> list[Record]:
    return [Record(topics.TURNS, partition, start + i, ev.key, ev.to_bytes())
            for i, ev in enumerate(events)]


def closes(w: RecordingWriterDouble) -> list[object]:
    return [c[1] for c in w.calls if c[0] == "close"]


def run(coro):
    return asyncio.run(coro)


def processor(w: RecordingWriterDouble, table: Any = None, **settings: Any) -> Processor:
    return Processor(w, StreamSettings(idle_s=IDLE_S, **settings), turns=TURNS,
                     sessions=table)


def test_an_idle_session_is_closed_once_over_many_idle_periods() -> None:
    w = MemoryLikeCloseWriterDouble()
    table = CountingTableDouble()
    p = processor(w, table)
    run(p.handle_turns(records([turn("acme", "maya", "a", 1), turn("acme", "maya", "b", 1)])))
    last = max(v["last"] for v in table.values())
    writes = table.writes
    for period in range(1, 7):  # six idle periods with no traffic
        run(p.close_idle(now=last + period * IDLE_S + 1))
    assert sorted(closes(w)) == ["a", "b"]  # each closed once, not six times
    assert table.writes == writes + 2  # one record per close (the entry leaves), then none
    assert dict(table) == {}


def test_a_turn_after_a_close_opens_the_session_again() -> None:
    w = MemoryLikeCloseWriterDouble()
    p = processor(w)
    key = session_key(Scope(tenant_id="acme", user_id="maya"), "a")
    run(p.handle_turns(records([turn("acme", "maya", "a", 1)])))
    run(p.close_idle(now=p.sessions[key]["last"] + IDLE_S))
    assert closes(w) == ["a"] and key not in p.sessions
    run(p.handle_turns(records([turn("acme", "maya", "a", 3)], start=1)))
    assert key in p.sessions
    reopened = p.open_sessions.last(key)
    assert reopened is not None
    assert run(p.close_idle(now=reopened + IDLE_S / 2)) == [] and closes(w) == ["a"]
    run(p.close_idle(now=reopened + IDLE_S + 1))
    assert closes(w) == ["a", "a"]


def test_an_explicit_close_also_leaves_the_table_and_the_idle_scan() -> None:
    w = MemoryLikeCloseWriterDouble()
    table = CountingTableDouble()
    p = processor(w, table)
    run(p.handle_turns(records([turn("acme", "maya", "a", 1)])))
    ev = ControlEvent(type="close_session", tenant_id="acme", user_id="maya",
                      session_id="a", ts=utcnow())
    run(p.handle_control(Record(topics.CONTROL, 0, 0, ev.key, ev.to_bytes())))
    assert dict(table) == {} and len(p.open_sessions) == 0
    writes = table.writes
    run(p.close_idle(now=10**12))
    assert closes(w) == ["a"] and table.writes == writes


def _many(p: Processor, n: int, prefix: str, partition: int = 0) -> None:
    events = [turn("acme", "maya", f"{prefix}{i}", 1) for i in range(n)]
    for i in range(0, n, 500):
        run(p.handle_turns(records(events[i:i + 500], partition=partition, start=i)))


def test_the_sweep_visits_open_sessions_only() -> None:
    """Cost bounded by open (due) sessions: closed and active ones are not visited."""
    w = MemoryLikeCloseWriterDouble()
    p = processor(w, batch_max=1000)
    _many(p, 1000, "old")
    t0 = max(v["last"] for v in p.sessions.values())
    run(p.close_idle(now=t0 + IDLE_S + 1))
    assert len(closes(w)) == 1000 and len(p.sessions) == 0
    # 1000 sessions closed long ago and 50 active ones: a sweep visits none of them.
    _many(p, 50, "new")
    t1 = max(v["last"] for v in p.sessions.values())
    before = p.open_sessions.visited
    run(p.close_idle(now=t1 + IDLE_S / 2))
    assert p.open_sessions.visited == before and len(closes(w)) == 1000
    # The 50 due later: 50 visits, 50 closes.
    run(p.close_idle(now=t1 + IDLE_S + 1))
    assert p.open_sessions.visited - before == 50 and len(closes(w)) == 1050


def test_due_closes_are_grouped_per_chunk_and_the_loop_runs_between_chunks() -> None:
    async def scenario() -> tuple[int, int]:
        w = MemoryLikeCloseWriterDouble()
        p = processor(w, batch_max=10_000)
        n = 3 * SWEEP_CHUNK + 5
        await p.handle_turns(records([turn("acme", "maya", f"s{i}", 1) for i in range(n)]))
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        ticks = 0
        await p.close_idle(now=max(v["last"] for v in p.sessions.values()) + IDLE_S + 1)
        stop = True
        await task
        return len(closes(w)), ticks

    n_closed, ticks = run(scenario())
    assert n_closed == 3 * SWEEP_CHUNK + 5
    assert ticks >= 4  # at least once per chunk


def test_two_sweeps_never_overlap() -> None:
    async def scenario() -> tuple[list[Any], list[Any], int]:
        w = MemoryLikeCloseWriterDouble()
        p = processor(w, batch_max=10_000)
        await p.handle_turns(records([turn("acme", "maya", f"s{i}", 1)
                                      for i in range(2 * SWEEP_CHUNK)]))
        now = max(v["last"] for v in p.sessions.values()) + IDLE_S + 1
        first = asyncio.create_task(p.close_idle(now=now))
        await asyncio.sleep(0)  # the first run is under way
        second = await p.close_idle(now=now)
        return await first, second, len(closes(w))

    first, second, n_closed = run(scenario())
    assert second == [] and n_closed == 2 * SWEEP_CHUNK


def test_a_sweep_told_to_stop_leaves_the_rest_open() -> None:
    w = MemoryLikeCloseWriterDouble()
    p = processor(w, batch_max=10_000)
    run(p.handle_turns(records([turn("acme", "maya", f"s{i}", 1)
                                for i in range(3 * SWEEP_CHUNK)])))
    calls = iter([False, True])
    now = max(v["last"] for v in p.sessions.values()) + IDLE_S + 1
    run(p.close_idle(now=now, stopping=lambda: next(calls, True)))
    assert len(closes(w)) == SWEEP_CHUNK  # one chunk, then it stopped
    assert len(p.open_sessions) == 2 * SWEEP_CHUNK  # still open: the next sweep closes them
    run(p.close_idle(now=now))
    assert len(closes(w)) == 3 * SWEEP_CHUNK


def test_after_a_rebalance_the_index_is_rebuilt_from_the_table_for_owned_partitions() -> None:
    owned = {0}
    w = MemoryLikeCloseWriterDouble()
    table: dict[str, Any] = {}
    # Entries another worker wrote: partition 0 (ours) and 1 (someone else's).
    for sid, part in (("mine", 0), ("theirs", 1)):
        table[session_key(Scope(tenant_id="acme", user_id="maya"), sid)] = {
            "tenant_id": "acme", "user_id": "maya", "session_id": sid, "provisional": [1],
            "held": [], "last": 1000.0, "partition": part}
    p = Processor(w, StreamSettings(idle_s=IDLE_S), turns=TURNS, sessions=table,
                  owned=lambda part: part in owned)
    run(p.close_idle(now=1000.0 + IDLE_S + 1))
    assert closes(w) == ["mine"]
    owned.add(1)  # partition 1 is handed over to this worker
    p.sessions_moved()
    run(p.close_idle(now=1000.0 + IDLE_S + 2))
    assert closes(w) == ["mine", "theirs"] and table == {}


def test_the_index_rebuild_yields_to_the_loop() -> None:
    async def scenario() -> int:
        table = {session_key(Scope(tenant_id="acme", user_id="maya"), f"s{i}"): {
            "tenant_id": "acme", "user_id": "maya", "session_id": f"s{i}",
            "provisional": [1], "held": [], "last": 1000.0 + i}
            for i in range(4 * SWEEP_CHUNK)}
        p = Processor(RecordingWriterDouble(), StreamSettings(idle_s=IDLE_S), turns=TURNS,
                      sessions=table)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            for _ in range(100):
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        ticks = 0
        await p.refresh_index()
        seen = ticks
        task.cancel()
        assert len(p.open_sessions) == 4 * SWEEP_CHUNK
        return seen

    assert run(scenario()) >= 3


# -- keys -------------------------------------------------------------------------------------

ACME_XY = Scope(tenant_id="acme", user_id="x/y")
ACMEX_Y = Scope(tenant_id="acme/x", user_id="y")


def test_ids_with_a_slash_do_not_share_a_table_entry() -> None:
    """tenant acme user x/y and tenant acme/x user y: 'acme/x/y/s' for both in the old keys."""
    w = MemoryLikeCloseWriterDouble()
    p = processor(w)
    run(p.handle_turns(records([turn("acme", "x/y", "s", 1), turn("acme/x", "y", "s", 1)])))
    assert len(p.sessions) == 2
    assert {(v["tenant_id"], v["user_id"]) for v in p.sessions.values()} == {
        ("acme", "x/y"), ("acme/x", "y")}
    # Deleting one tenant's session leaves the other's entry.
    ev = ControlEvent(type="delete_session", tenant_id="acme", user_id="x/y",
                      session_id="s", ts=utcnow())
    run(p.handle_control(Record(topics.CONTROL, 0, 0, ev.key, ev.to_bytes())))
    assert [(v["tenant_id"], v["user_id"]) for v in p.sessions.values()] == [("acme/x", "y")]
    run(p.close_idle(now=10**12))
    assert [c for c in w.calls if c[0] in ("close", "delete")] == [
        ("delete", ("acme/x/y", "s")), ("close", "s")]


def test_the_key_names_its_session_and_routes_like_its_turns() -> None:
    from aiokafka.partitioner import DefaultPartitioner

    from streams.app import SessionTable

    for scope in (ACME_XY, ACMEX_Y):
        key = session_key(scope, "s")
        assert parse_key(key) == (scope, "s")
        assert route_of(key) == turn(scope.tenant_id, scope.user_id, "s", 1).key
    assert session_key(ACME_XY, "s") != session_key(ACMEX_Y, "s")
    parts = list(range(4))
    table = SimpleNamespace(partitions=4, app=None)
    for key in (session_key(ACME_XY, "s"), session_key(Scope(tenant_id="t", user_id="u"), "q"),
                "t/u/q"):  # an old-form key: placed where it always was
        want = DefaultPartitioner()(route_of(key), parts, parts)
        assert SessionTable.partition_for_key(table, key) == want  # type: ignore[arg-type]
    assert route_of("t/u/q") == b"t/u/q" and parse_key("t/u/q") is None


def test_old_form_keys_are_read_and_moved_to_the_new_key() -> None:
    """A table written before keys were escaped: its entries are still closed, once."""
    w = MemoryLikeCloseWriterDouble()
    table = CountingTableDouble()
    dict.__setitem__(table, "acme/maya/a", {
        "tenant_id": "acme", "user_id": "maya", "session_id": "a", "provisional": [1],
        "held": [], "last": 1000.0, "partition": 0})
    p = processor(w, table)
    run(p.refresh_index())
    new = session_key(Scope(tenant_id="acme", user_id="maya"), "a")
    assert list(table) == [new] and table[new]["provisional"] == [1]
    run(p.close_idle(now=1000.0 + IDLE_S + 1))
    run(p.close_idle(now=1000.0 + 3 * IDLE_S))
    assert closes(w) == ["a"] and dict(table) == {}


# -- the index alone --------------------------------------------------------------------------

def _drain(index: OpenSessions, cutoff: float) -> Iterator[str]:
    more = True
    while more:
        due, more = index.due(cutoff, 3)
        yield from (k for k, _ in due)


def test_the_open_index_pops_due_sessions_in_time_order_and_requeues_moved_ones() -> None:
    index = OpenSessions()
    for i, key in enumerate("abcde"):
        index.touch(key, float(i))
    index.touch("a", 10.0)  # a moved on: not due at 5
    index.discard("c")  # closed
    index.touch("c", 1.0)  # and opened again, earlier than its stale entry
    assert list(_drain(index, 5.0)) == ["b", "c", "d", "e"]
    assert len(index) == 1 and index.last("a") == 10.0
    assert list(_drain(index, 9.0)) == [] and list(_drain(index, 10.0)) == ["a"]
    assert len(index) == 0


# -- the timer ----------------------------------------------------------------------------------

def test_the_timer_does_not_wait_for_a_batch_in_hand() -> None:
    async def scenario() -> tuple[float, int]:
        w = MemoryLikeCloseWriterDouble()
        p = processor(w)
        await p.handle_turns(records([turn("acme", "maya", "a", 1)]))
        now = max(v["last"] for v in p.sessions.values()) + IDLE_S + 1
        async with p._order:
            started = time.monotonic()
            await asyncio.wait_for(p.close_idle(now=now), 5)
            return time.monotonic() - started, len(closes(w))

    took, n_closed = run(scenario())
    assert took < 1.0 and n_closed == 1


def _round(p: Processor, *, deliver_error: BaseException | None, stopping: bool = False,
           stops: bool = False) -> list[BaseException]:
    """One idle_round; what reached ``fatal``. With ``stops``, a failing deliver first
    marks the worker stopping (SIGTERM stopped the producer)."""
    from streams.app import idle_round

    fatal: list[BaseException] = []
    state = [stopping]

    async def deliver(out: Any) -> None:
        if deliver_error is not None:
            state[0] = state[0] or stops
            raise deliver_error

    async def outage(down: Any) -> None:
        fatal.append(down)

    run(idle_round(p, deliver, stopping=lambda: state[0], outage=outage, fatal=fatal.append))
    return fatal


def _with_a_due_session() -> tuple[Processor, RecordingWriterDouble]:
    """A session idle for long, whose close writes a notice (its last unit turns final)."""
    w = RecordingWriterDouble()
    p = processor(w)
    run(p.handle_turns(records([turn("acme", "maya", "a", 1)])))
    for key in list(p.sessions):
        p.sessions[key] = {**p.sessions[key], "last": 0.0}
    p.open_sessions = OpenSessions()
    p.sessions_moved()  # the index is rebuilt from the table: due now
    return p, w


def test_a_producer_stopped_under_a_sweep_is_not_fatal() -> None:
    """Before: SIGTERM stopped the producer under a sweep; its NotReady was CRITICAL (exit 70)."""
    from faust.exceptions import NotReady

    p, w = _with_a_due_session()
    fatal = _round(p, deliver_error=NotReady("Producer service not yet started"), stops=True)
    assert fatal == [] and closes(w) == ["a"]


def test_while_stopping_no_sweep_starts_and_other_errors_stay_fatal() -> None:
    p, w = _with_a_due_session()
    assert _round(p, deliver_error=None, stopping=True) == [] and closes(w) == []
    boom = RuntimeError("a bug")
    q, _ = _with_a_due_session()
    assert _round(q, deliver_error=boom, stops=True) == []  # stopping by then: logged
    r, _ = _with_a_due_session()
    assert _round(r, deliver_error=boom) == [boom]  # not stopping: the worker stops on it
