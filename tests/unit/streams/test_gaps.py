"""Records the consumer skipped are held back and fetched again (streams.gaps)."""

from __future__ import annotations

from streams.gaps import SkipGuard


def test_records_in_order_pass_and_the_next_offset_follows() -> None:
    g = SkipGuard()
    keep, rewind = g.admit([(0, 5), (0, 6), (1, 0)])
    assert keep == [True, True, True] and not rewind
    assert g.next == {0: 7, 1: 1}


def test_a_record_past_a_hole_is_held_back_and_the_partition_sent_back_once() -> None:
    g = SkipGuard()
    g.admit([(0, 5)])
    keep, rewind = g.admit([(0, 7), (1, 3), (0, 8)])  # offset 6 never came
    assert keep == [False, True, False] and rewind == {0: 6}
    keep, rewind = g.admit([(0, 9)])  # still buffered behind the hole: no second rewind
    assert keep == [False] and not rewind
    keep, rewind = g.admit([(0, 6), (0, 7), (0, 8), (0, 9)])  # fetched again, in order
    assert keep == [True] * 4 and not rewind and g.next[0] == 10 and not g.rewinding


def test_a_hole_right_after_the_committed_offset_counts() -> None:
    g = SkipGuard()
    g.start({0: 4})
    keep, rewind = g.admit([(0, 6)])
    assert keep == [False] and rewind == {0: 4}


def test_records_delivered_again_are_stored_again_without_a_rewind() -> None:
    g = SkipGuard()
    g.admit([(0, 5), (0, 6)])
    keep, rewind = g.admit([(0, 5), (0, 6), (0, 7)])
    assert keep == [True, True, True] and not rewind and g.next[0] == 8


def test_a_last_record_gone_past_is_fetched_again_after_two_looks() -> None:
    g = SkipGuard()
    g.admit([(0, 10)])  # due: 11; the topic ends at 12; the consumer fetches from 12
    assert g.stalled({0: 12}, {0: 12}, {0: 10}) == {}  # one look: maybe on its way
    assert g.stalled({0: 12}, {0: 12}, {0: 10}) == {0: 11}
    assert g.stalled({0: 12}, {0: 12}, {0: 10}) == {}  # asked once, until it arrives


def test_no_stall_while_the_consumer_has_not_gone_past_or_the_topic_ends_there() -> None:
    g = SkipGuard()
    g.admit([(0, 10)])
    for _ in range(3):
        assert g.stalled({0: 11}, {0: 12}, {0: 10}) == {}  # nothing after 10 in the topic
        assert g.stalled({0: 12}, {0: 11}, {0: 10}) == {}  # the fetch of 11 is still to come
        # handed to the stream, waiting behind a slow batch or a control's wait: not lost
        assert g.stalled({0: 12}, {0: 12}, {0: 11}) == {}


def test_a_reset_forgets_everything() -> None:
    g = SkipGuard()
    g.admit([(0, 5), (0, 7)])
    g.reset()
    assert not g.next and not g.rewinding
    assert g.admit([(0, 9)]) == ([True], {})


def test_a_committed_offset_past_a_hole_is_not_trusted() -> None:
    """Faust commits past a hole it saw; a delete waiting on that offset would be applied
    before the hole's records are fetched again, splitting their batch."""
    g = SkipGuard()
    g.admit([(0, 5), (0, 8)])  # 6 and 7 never came: held back, sent back to 6
    assert g.cap({0: 9, 1: 4}) == {0: 6, 1: 4}
    g.admit([(0, 6), (0, 7), (0, 8)])
    assert g.cap({0: 9}) == {0: 9}


def _app_double(gaps: dict[str, SkipGuard], committed_of: object) -> object:
    """Not a StreamApp: the state ``StreamApp._seed`` reads, with its real helper bound."""
    import functools
    from types import SimpleNamespace

    from streams.app import StreamApp

    app = SimpleNamespace(gaps=gaps, _committed_of=committed_of, _seed_retry_at={})
    app._watch_from_committed = functools.partial(StreamApp._watch_from_committed, app)
    return app


def test_a_partition_never_handed_a_record_is_watched_from_the_committed_offset() -> None:
    # The rebalance's new owner was handed nothing on a control partition whose only
    # record (a delete) the consumer went past: seeded from the group's committed offset,
    # the watch fetches it again at the second look.
    import asyncio

    from streams.app import StreamApp

    guard = SkipGuard()
    asked: list[list[int]] = []

    async def committed_of(topic: str, partitions: list[int]) -> dict[int, int]:
        asked.append(partitions)
        return {p: 5 for p in partitions}

    app = _app_double({"control": guard}, committed_of)
    asyncio.run(StreamApp._seed(app, {"control": [2, 0]}))  # type: ignore[arg-type]
    assert asked == [[0, 2]] and guard.next == {0: 5, 2: 5}
    assert guard.stalled({0: 6}, {0: 6}, {}) == {}  # one look: may still be in a buffer
    assert guard.stalled({0: 6}, {0: 6}, {}) == {0: 5}
    asyncio.run(StreamApp._seed(app, {"control": []}))  # type: ignore[arg-type]
    assert asked == [[0, 2]]  # nothing unseeded: no broker call


def test_a_partition_never_committed_is_asked_again_only_after_a_while() -> None:
    import asyncio

    from streams.app import StreamApp

    guard = SkipGuard()
    asked: list[list[int]] = []

    async def committed_of(topic: str, partitions: list[int]) -> dict[int, int]:
        asked.append(partitions)
        return {p: 3 for p in partitions if p == 1}  # partition 0 has no commit

    app = _app_double({"turns": guard}, committed_of)
    asyncio.run(StreamApp._seed(app, {"turns": [0, 1]}))  # type: ignore[arg-type]
    assert guard.next == {1: 3}  # no start for 0: a guess could rewind a whole partition
    asyncio.run(StreamApp._seed(app, {"turns": [0]}))  # type: ignore[arg-type]
    assert asked == [[0, 1]]  # not asked again at the next look (one broker call each)
    app._seed_retry_at[("turns", 0)] = 0.0  # type: ignore[attr-defined] # the retry is due
    asyncio.run(StreamApp._seed(app, {"turns": [0]}))  # type: ignore[arg-type]
    assert asked == [[0, 1], [0]]
