"""Dates a question names, and whether a session's date fits them.

People ask "What setback did Melanie face in October 2023?" or "What movie did
Joanna watch on 1 May, 2022?". Such a question is about the sessions held in or
shortly after that period (events are told after they happen), so the
retriever adds a boost to candidate sessions whose date fits (see
:func:`memstrata.retrieval.fusion.date_boost`).

Only explicit calendar dates are read here: a day ("1 May 2022", "May 1,
2022"), a month with its year ("October 2023"), a month alone ("in June":
any year) and a year after "in/during" ("in 2023"). Relative phrases ("last
summer") need the time the question was asked, which a search does not carry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
_MONTHS = {name: i for i, name in enumerate(_MONTH_NAMES, start=1)}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_M = r"(january|february|march|april|may|june|july|august|september|october|november|" \
     r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M},?\s+(\d{{4}})\b",
                             re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_M},?\s+(\d{{4}})\b", re.I)
# A bare month needs a preposition before it, so "may" the verb is not read as May.
_MONTH_ALONE = re.compile(rf"\b(?:in|during|of|since|early|late|mid|last)\s+{_M}\b", re.I)
_YEAR = re.compile(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", re.I)
# Every pattern above needs a digit or a month name (each starts with one of these):
# a question with neither names no period, and most questions have neither.
_MAYBE = re.compile(r"\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec", re.I)


@dataclass(frozen=True, slots=True)
class Period:
    """A span of days, or (``month`` set, no days) a calendar month in any year."""

    start: date | None = None
    end: date | None = None
    month: int | None = None

    def fits(self, session_date: date, before_days: int = 7, after_days: int = 31) -> bool:
        """Was a session on ``session_date`` plausibly about this period?

        A session fits from ``before_days`` before the period (plans told
        ahead) to ``after_days`` after it (events told afterwards).
        """
        if self.month is not None:
            following = self.month % 12 + 1
            return session_date.month == self.month or (
                session_date.month == following and session_date.day <= after_days
            )
        assert self.start is not None and self.end is not None
        return (self.start - timedelta(days=before_days) <= session_date
                <= self.end + timedelta(days=after_days))


def _month(word: str) -> int:
    return _MONTHS[word.lower().rstrip(".")]


def named_periods(text: str) -> list[Period]:
    """The calendar periods ``text`` names, most specific readings first."""
    if _MAYBE.search(text) is None:
        return []
    out: list[Period] = []
    rest = text
    for pattern, day_group, month_group, year_group in (
        (_DAY_MONTH_YEAR, 1, 2, 3),
        (_MONTH_DAY_YEAR, 2, 1, 3),
    ):
        for m in pattern.finditer(rest):
            try:
                d = date(int(m.group(year_group)), _month(m.group(month_group)),
                         int(m.group(day_group)))
            except ValueError:
                continue
            out.append(Period(d, d))
        rest = pattern.sub(" ", rest)
    for m in _MONTH_YEAR.finditer(rest):
        year, month = int(m.group(2)), _month(m.group(1))
        first = date(year, month, 1)
        last = (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1))
        out.append(Period(first, last))
    rest = _MONTH_YEAR.sub(" ", rest)
    for m in _MONTH_ALONE.finditer(rest):
        out.append(Period(month=_month(m.group(1))))
    for m in _YEAR.finditer(rest):
        year = int(m.group(1))
        out.append(Period(date(year, 1, 1), date(year, 12, 31)))
    return out


def fits_any(periods: list[Period], session_date: date) -> bool:
    """Whether ``session_date`` fits at least one of ``periods``."""
    return any(p.fits(session_date) for p in periods)
