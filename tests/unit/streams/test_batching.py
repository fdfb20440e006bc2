"""streams.batching.paced: batches cut from the previous cut, in order, nothing lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.batching import paced


async def _chunks(chunks: Sequence[Sequence[int]], error: Exception | None = None
                  ) -> AsyncIterator[Sequence[int]]:
    for chunk in chunks:
        yield chunk
        await asyncio.sleep(0)
    if error is not None:
        raise error


async def _collect(source: AsyncIterator[Sequence[int]], batch_max: int,
                   within: float) -> list[list[int]]:
    return [b async for b in paced(source, batch_max, within)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(), min_size=1, max_size=9), max_size=12),
       st.integers(1, 7), st.sampled_from([0.0, 3600.0]))
def test_every_item_once_in_order_and_no_batch_over_the_limit(
        chunks: list[list[int]], batch_max: int, within: float) -> None:
    batches = asyncio.run(_collect(_chunks(chunks), batch_max, within))
    assert [x for b in batches for x in b] == [x for c in chunks for x in c]
    assert all(0 < len(b) <= batch_max for b in batches)


def test_the_first_items_after_a_quiet_spell_go_at_once_then_a_batch_fills() -> None:
    # within is an hour: only the size limit (or the end) can cut after the first batch.
    batches = asyncio.run(_collect(_chunks([[1], [2], [3], [4], [5]]), 3, 3600.0))
    assert batches == [[1], [2, 3, 4], [5]]


def test_an_error_of_the_source_comes_after_the_batches_before_it() -> None:
    got: list[list[int]] = []

    async def go() -> None:
        async for b in paced(_chunks([[1, 2]], RuntimeError("broker gone")), 8, 0.0):
            got.append(b)

    with pytest.raises(RuntimeError, match="broker gone"):
        asyncio.run(go())
    assert got == [[1, 2]]


def test_a_batch_limit_below_one_is_refused() -> None:
    async def go() -> None:
        async for _ in paced(_chunks([]), 0, 1.0):
            pass

    with pytest.raises(ValueError, match="batch_max"):
        asyncio.run(go())
