"""Calendar periods read from questions, and which session dates fit them."""

from __future__ import annotations

from datetime import date

from memstrata.retrieval.dates import Period, fits_any, named_periods


def test_days_months_and_years_are_read_in_their_usual_spellings():
    assert named_periods("What movie did Joanna watch on 1 May, 2022?") == [
        Period(date(2022, 5, 1), date(2022, 5, 1))]
    assert named_periods("What did Melanie show on October 13, 2023?") == [
        Period(date(2023, 10, 13), date(2023, 10, 13))]
    assert named_periods("What setback did Melanie face in October 2023?") == [
        Period(date(2023, 10, 1), date(2023, 10, 31))]
    assert named_periods("What did Mel paint in Feb. 2024?") == [
        Period(date(2024, 2, 1), date(2024, 2, 29))]
    assert named_periods("When did Melanie go camping in June?") == [Period(month=6)]
    assert named_periods("How often did she swim in 2023?") == [
        Period(date(2023, 1, 1), date(2023, 12, 31))]


def test_words_that_only_look_like_dates_are_ignored():
    assert named_periods("May I ask what Caroline researched?") == []
    assert named_periods("What did she march for?") == []
    assert named_periods("He ran 2023 metres") == []
    assert named_periods("On 31 February 2023 nothing happened") == []  # no such day


def test_a_session_fits_from_a_week_before_to_a_month_after():
    day = Period(date(2023, 5, 1), date(2023, 5, 1))
    assert day.fits(date(2023, 5, 2))  # told the next day
    assert day.fits(date(2023, 4, 25))  # planned a week ahead
    assert not day.fits(date(2023, 4, 20))
    assert not day.fits(date(2023, 6, 5))
    june = Period(month=6)
    assert june.fits(date(2021, 6, 30)) and june.fits(date(2023, 7, 3))
    assert not june.fits(date(2023, 8, 1))
    assert fits_any([day, june], date(2022, 6, 9))
    assert not fits_any([], date(2022, 6, 9))
