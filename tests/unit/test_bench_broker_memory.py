"""The broker-memory bench's verdict on DeleteTopics (ADR 0006): released, reused."""

from __future__ import annotations

import pytest

from bench.broker_memory import _bounded, delete_verdict


def _cycle(full: int, after: int) -> dict[str, int]:
    return {"rss_kib_full": full, "rss_kib_after_delete": after, "released_kib": full - after}


def test_a_delete_that_frees_and_a_flat_peak_pass() -> None:
    # the shape measured on tansu 0.6: 16 MB empty, 35 MB full, back to 17 MB each time
    v = delete_verdict(16_316, [_cycle(35_116, 16_728), _cycle(35_420, 16_828)])
    assert v == {"released": True, "reused": True}


def test_a_delete_that_keeps_the_records_is_not_released() -> None:
    v = delete_verdict(16_000, [_cycle(35_000, 33_000)])
    assert v["released"] is False


def test_generations_that_add_up_are_not_reused() -> None:
    # each generation's peak 19 MB above the last: the delete freed it, nothing reused it
    v = delete_verdict(16_000, [_cycle(35_000, 16_500), _cycle(54_000, 35_500)])
    assert v["reused"] is False


def test_no_growth_is_not_called_released() -> None:
    assert delete_verdict(16_000, [_cycle(16_000, 16_000)])["released"] is False


def test_no_cycles_and_unbounded_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="cycles"):
        delete_verdict(16_000, [])
    with pytest.raises(SystemExit, match="--cycles must be between 1 and 10"):
        _bounded(11, "--cycles", 1, 10)
