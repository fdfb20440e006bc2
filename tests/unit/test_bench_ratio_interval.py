"""The paired interval a side-by-side bench prints over its rounds (bench._common)."""

from __future__ import annotations

import math

import pytest

from bench._common import ratio_interval


def test_equal_rounds_give_a_point_interval() -> None:
    mean, low, high = ratio_interval([0.5, 0.5, 0.5])
    assert mean == pytest.approx(0.5) and low == pytest.approx(0.5) and high == pytest.approx(0.5)


def test_the_mean_is_geometric_and_the_interval_uses_t() -> None:
    mean, low, high = ratio_interval([0.4, 0.6])
    assert mean == pytest.approx(math.sqrt(0.24))
    # Two rounds: one degree of freedom, t = 12.706, so the interval is wide.
    sd = abs(math.log(0.6) - math.log(0.4)) / math.sqrt(2)
    half = 12.706 * sd / math.sqrt(2)
    assert low == pytest.approx(mean * math.exp(-half))
    assert high == pytest.approx(mean * math.exp(half))
    assert low < 0.4 < 0.6 < high


def test_more_rounds_narrow_the_interval() -> None:
    few = ratio_interval([0.48, 0.55, 0.52])
    many = ratio_interval([0.48, 0.55, 0.52] * 4)
    assert many[2] - many[1] < few[2] - few[1]


def test_one_round_is_its_own_interval() -> None:
    assert ratio_interval([0.7]) == pytest.approx((0.7, 0.7, 0.7))


@pytest.mark.parametrize("bad", [[], [0.5, 0.0], [-1.0]])
def test_bad_ratios_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="ratios must be positive"):
        ratio_interval(bad)
