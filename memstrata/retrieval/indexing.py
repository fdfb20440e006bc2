"""What the retriever indexes for each L0 unit, in one place.

Both the ingest path (:mod:`memstrata.memory`) and the keyword boost read
these functions, so the index and the boost always agree on a unit's terms.

Dates get special care: L0 text carries absolute dates in ISO form
(``2023-05-07``), but people ask "what happened on 7 May 2023?". The keyword
field therefore also holds each date spelled out in words, plus the session's
own date, so a question that names a day or a month matches the turns of that
day lexically.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from memstrata.memo import memo

from memstrata.model import L0Unit

_ISO = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@memo(8192)
def _spelled(year: int, month: int, day: int | None) -> str | None:
    """``8 May 2023`` (or ``May 2023`` without a day); None for an impossible date.

    Cached and locale-free: every search spells the dates of each candidate unit.
    """
    try:
        date(year, month, day or 1)
    except ValueError:
        return None
    name = f"{_MONTHS[month - 1]} {year}"
    return f"{day} {name}" if day else name


def date_terms(unit: L0Unit) -> list[str]:
    """The unit's dates in words: its session date, then any ISO date in its keywords."""
    return _date_terms(unit.keywords, unit.session_date)


def _date_terms(keywords: Sequence[str], session_date: datetime | None) -> list[str]:
    found: list[tuple[int, int, int | None]] = []
    if session_date is not None:
        d = session_date
        found.append((d.year, d.month, d.day))
    for kw in keywords:
        if "-" not in kw:  # cheap pre-check: most keywords hold no ISO date
            continue
        for m in _ISO.finditer(kw):
            y, mo, dd = m.groups()
            found.append((int(y), int(mo), int(dd) if dd else None))
    out: list[str] = []
    for y, mo, dd in found:
        # The day and its month: "8 May 2023" and "May 2023".
        for spelled in (_spelled(y, mo, dd), _spelled(y, mo, None)):
            if spelled and spelled not in out:
                out.append(spelled)
    return out


def lexical_keywords(unit: L0Unit) -> list[str]:
    """The BM25 keywords field: the unit's keywords plus its dates in words."""
    return list(_lexical_keywords(tuple(unit.keywords), unit.session_date))


@memo(16384)
def _lexical_keywords(keywords: tuple[str, ...], session_date: datetime | None) -> tuple[str, ...]:
    """Cached by content: every search asks again for the keywords of its candidates."""
    spelled = _date_terms(keywords, session_date)
    return (*keywords, *(t for t in spelled if t not in keywords))


def dense_text(unit: L0Unit) -> str:
    """What the sentence encoder sees: the summary followed by its keywords."""
    return unit.index_text()
