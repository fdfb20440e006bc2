"""Relative dates resolved against the session date, at the right granularity."""

from datetime import date, datetime

import pytest

from memstrata.text.dates import annotate_dates, find_relative_dates, parse_datetime

MON = datetime(2023, 5, 8, 13, 56)  # LoCoMo's "1:56 pm on 8 May, 2023", a Monday
THU = datetime(2023, 5, 25, 10, 0)


def labels(text: str, anchor: datetime = MON) -> list[str]:
    return [r.label for r in find_relative_dates(text, anchor)]


def test_yesterday_is_inserted_after_the_phrase():
    text, found = annotate_dates("I went to a support group yesterday and it was great.", MON)
    assert text == "I went to a support group yesterday (2023-05-07) and it was great."
    assert [(r.phrase, r.value, r.granularity) for r in found] == [
        ("yesterday", date(2023, 5, 7), "day")
    ]


@pytest.mark.parametrize(
    ("phrase", "label"),
    [
        ("last year", "2022"),
        ("last month", "2023-04"),
        ("last week", "the week of 2023-05-01"),
        ("next month", "2023-06"),
        ("two days ago", "2023-05-06"),
        ("3 weeks ago", "the week of 2023-04-17"),
        ("in 2 weeks", "the week of 2023-05-22"),
        ("a few days ago", "around 2023-05-05"),
        ("tomorrow", "2023-05-09"),
        ("last night", "2023-05-07"),
        ("the day before yesterday", "2023-05-06"),
        ("last Saturday", "2023-05-06"),
        ("last weekend", "the weekend of 2023-05-06"),
        ("last summer", "summer 2022"),
        ("two years ago", "2021"),
    ],
)
def test_granularity_follows_the_phrase(phrase: str, label: str):
    assert labels(f"We did it {phrase}.") == [label]


def test_weekday_and_weekend_follow_the_tense_of_their_sentence():
    assert labels("I'll call her on Friday.") == ["2023-05-12"]
    assert labels("I called her on Friday.") == ["2023-05-05"]
    # Early in the week, "this weekend" in the past tense is the one just gone.
    assert labels("This weekend we went hiking.") == ["the weekend of 2023-05-06"]
    assert labels("This weekend we will go hiking.") == ["the weekend of 2023-05-13"]
    # Each sentence has its own tense.
    assert labels("We will travel next week. On Sunday we rested.") == [
        "the week of 2023-05-15", "2023-05-07"]


def test_last_sunday_from_a_thursday():
    assert labels("I ran a charity race last Sunday.", THU) == ["2023-05-21"]


def test_words_that_only_look_like_dates_are_left_alone():
    for text in ("The last time we met was fun.", "It is next to the park.", "Day by day."):
        assert annotate_dates(text, MON) == (text, [])


def test_no_anchor_means_no_change_and_annotating_twice_is_harmless():
    assert annotate_dates("I saw it yesterday.", None) == ("I saw it yesterday.", [])
    once, _ = annotate_dates("I saw it yesterday.", MON)
    assert annotate_dates(once, MON)[0] == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37)),
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21)),
        ("2023-05-20T02:21:00", datetime(2023, 5, 20, 2, 21)),
        ("8 May 2023", datetime(2023, 5, 8)),
    ],
)
def test_session_dates_parse(text: str, expected: datetime):
    assert parse_datetime(text) == expected


def test_unparseable_session_date_is_none():
    assert parse_datetime("") is None
    assert parse_datetime("not a date at all") is None


# One test per kind of expression: seasons, months and days without a year, weekdays,
# "next <weekday>", each placed in the right year around the session date.
FEB = datetime(2024, 2, 1, 12, 0)  # a Thursday


def test_this_season_said_before_it_is_the_coming_one():
    assert labels("I'm adding four more hives this spring.", FEB) == ["spring 2024"]
    assert labels("We went skiing this winter.", FEB) == ["winter 2023"]  # the one in progress
    assert labels("Last summer was hot.", FEB) == ["summer 2023"]


def test_month_without_a_year_is_the_nearest_and_since_looks_back():
    assert labels("I'm vegetarian since January.", datetime(2024, 3, 2)) == ["2024-01"]
    assert labels("A trip to Lisbon in May. You may come.", datetime(2024, 3, 2)) == ["2024-05"]
    assert labels("We moved in December.", datetime(2024, 1, 5)) == ["2023-12"]
    assert labels("I'll visit in November.", datetime(2024, 12, 20)) == ["2025-11"]
    # "since December" said in January is last year's December.
    assert labels("Sober since December.", datetime(2024, 1, 5)) == ["2023-12"]


def test_day_and_month_without_a_year():
    assert labels("The half marathon is on 2 June.", datetime(2024, 4, 10)) == ["2024-06-02"]
    assert labels("Her party was on March 3rd.", datetime(2024, 4, 10)) == ["2024-03-03"]
    assert labels("We'll meet on January 4th.", datetime(2023, 12, 28)) == ["2024-01-04"]


def test_written_years_are_left_alone():
    for text in ("We met on June 3, 2023.", "It was in June 2022.", "On 2 June 2021 it rained."):
        assert annotate_dates(text, FEB) == (text, [])


def test_weekdays_and_next_monday():
    assert labels("I start a new job next Monday.", datetime(2024, 1, 5)) == ["2024-01-08"]
    assert labels("I saw her last Friday.", datetime(2024, 1, 5)) == ["2023-12-29"]
    assert labels("I'll call her on Tuesday.", datetime(2024, 1, 5)) == ["2024-01-09"]
