"""Relative date expressions made absolute against a session date.

"When did X happen?" is answerable from memory only if "yesterday" was pinned
to a calendar date when the turn was stored. Candidates are found with one
compiled regex (``dateparser.search`` over whole texts is far too slow for
ingestion); each distinct (phrase, anchor day) is resolved once by
``dateparser.parse`` and cached. Weekends and seasons, which dateparser does
not know, are computed here.

Results keep their granularity, because "last year" is a year and not the day
twelve months ago: day -> ``2023-05-07``, week -> ``the week of 2023-05-01``
(its Monday), weekend -> ``the weekend of 2023-05-06`` (its Saturday), month ->
``2023-04``, season -> ``summer 2022``, year -> ``2022``. Vague counts ("a few
days ago") are marked ``around``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from memstrata.memo import memo
from typing import Literal

from memstrata.text import vocab

Granularity = Literal["day", "week", "weekend", "month", "season", "year"]

_WEEKDAYS = vocab.WEEKDAYS
_SEASONS = vocab.SEASONS
_NUMBER_WORDS = {
    "a": 1, "an": 1, **vocab.NUMBER_WORDS, **vocab.VAGUE_COUNTS,
    "a couple": 2, "a couple of": 2, "couple of": 2, "a few": 3,
}
_VAGUE = tuple(vocab.VAGUE_COUNTS)

_NUM = (
    rf"(?:\d{{1,2}}|an?|{'|'.join(vocab.NUMBER_WORDS)}"
    r"|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|several)"
)
_UNIT = r"(?:day|week|weekend|month|year)s?"
_WD = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PERIOD = rf"(?:week|weekend|month|year|{_WD}|spring|summer|fall|autumn|winter)"

_CANDIDATE = re.compile(
    r"\b(?:"
    r"the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow"
    r"|yesterday|today|tonight|tomorrow|last\s+night"
    r"|this\s+(?:morning|afternoon|evening)"
    rf"|(?:this\s+past|last|this|next|past|coming)\s+{_PERIOD}"
    rf"|{_NUM}\s+{_UNIT}\s+ago"
    rf"|in\s+{_NUM}\s+{_UNIT}"
    rf"|on\s+{_WD}"
    r")\b",
    re.IGNORECASE,
)
_FUTURE_CUES = re.compile(
    r"\b(?:will|'ll|gonna|going\s+to|plan(?:ning)?|can't\s+wait|looking\s+forward|next|tomorrow|hope\s+to)\b",
    re.IGNORECASE,
)

# Session-date formats seen in the benchmarks, tried before dateparser.
_SESSION_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: 1:56 pm on 8 May, 2023
    "%I:%M %p on %d %b, %Y",
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval: 2023/05/20 (Sat) 02:21
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%d %B, %Y",
    "%d %B %Y",
)


@dataclass(frozen=True, slots=True)
class ResolvedDate:
    """One relative phrase found in a text and what it means on the calendar."""

    phrase: str
    start: int
    end: int
    value: date
    granularity: Granularity
    vague: bool = False

    @property
    def label(self) -> str:
        """The absolute form inserted after the phrase."""
        d = self.value
        text = {
            "day": d.isoformat(),
            "week": f"the week of {d.isoformat()}",
            "weekend": f"the weekend of {d.isoformat()}",
            "month": f"{d.year:04d}-{d.month:02d}",
            "season": f"{_season_of(d)} {d.year}",
            "year": f"{d.year:04d}",
        }[self.granularity]
        return f"around {text}" if self.vague else text


def _season_of(d: date) -> str:
    return ("winter", "spring", "summer", "fall")[(d.month % 12) // 3]


def _dateparser_parse(phrase: str, base: datetime, prefer: str) -> datetime | None:
    import dateparser

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got: datetime | None = dateparser.parse(
            phrase,
            languages=["en"],
            settings={
                "RELATIVE_BASE": base,
                "PREFER_DATES_FROM": prefer,
                "RETURN_AS_TIMEZONE_AWARE": False,
            },
        )
    return got


def parse_datetime(text: str) -> datetime | None:
    """A session timestamp in any common form ("1:56 pm on 8 May, 2023", ISO...)."""
    s = " ".join(text.strip().split())
    if not s:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        pass
    for fmt in _SESSION_FORMATS:
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            continue
    return _parse_absolute(s)


@memo(4096)
def _parse_absolute(s: str) -> datetime | None:
    return _dateparser_parse(s, datetime(2000, 1, 1), "past")


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _weekend(anchor: date, which: str, future: bool) -> date:
    """Saturday of the weekend meant by ``last``/``this``/``next weekend``."""
    wd = anchor.weekday()
    current = anchor - timedelta(days=wd - 5) if wd >= 5 else None
    previous = current - timedelta(days=7) if current else anchor - timedelta(days=wd + 2)
    upcoming = previous + timedelta(days=14 if current else 7)
    if which in ("last", "past", "this past"):
        return previous
    if which in ("next", "coming"):
        return upcoming
    # "this weekend": the one in progress; early in the week the one that just
    # ended (unless the sentence is about the future); otherwise the coming one.
    if current is not None:
        return current
    return previous if wd <= 1 and not future else upcoming


def _season(anchor: date, name: str, which: str, future: bool) -> date:
    """First day of the meant season (meteorological, northern hemisphere)."""
    name = "fall" if name == "autumn" else name
    month = {"spring": 3, "summer": 6, "fall": 9, "winter": 12}[name]
    # The occurrence that contains the anchor or started most recently before it.
    start = date(anchor.year, month, 1)
    if start > anchor:
        start = date(anchor.year - 1, month, 1)
    in_it = _season_of(anchor) == name
    if which in ("last", "past", "this past"):
        return date(start.year - 1, month, 1) if in_it else start
    if which in ("next", "coming"):
        return date(start.year + 1, month, 1)
    # "this summer": the current one, else this calendar year's, past or coming ("this
    # spring" said in February is the coming one, not last year's).
    if in_it:
        return start
    return date(anchor.year, month, 1)


def _count(word: str) -> tuple[int, bool]:
    w = " ".join(word.lower().split())
    if w.isdigit():
        return int(w), False
    return _NUMBER_WORDS.get(w, 1), any(v in w for v in _VAGUE)


@memo(8192)
def resolve_phrase(
    phrase: str, anchor: date, future: bool = False
) -> tuple[date, Granularity, bool] | None:
    """(date, granularity, vague) for one candidate phrase, or None if unresolvable."""
    p = " ".join(phrase.lower().split())
    base = datetime(anchor.year, anchor.month, anchor.day, 12, 0)
    prefer = "future" if future else "past"

    m = re.fullmatch(rf"(this past|last|this|next|past|coming) ({_PERIOD})", p)
    if m:
        which, period = m.groups()
        if period == "weekend":
            return _weekend(anchor, which, future), "weekend", False
        if period in _SEASONS:
            return _season(anchor, period, which, future), "season", False
        if which in ("this past", "past"):
            which = "last"
        elif which == "coming":
            which = "next"
        if period in _WEEKDAYS:
            if which == "this":
                which = "next" if future else "last"
                # "this Friday" said on a Friday is today.
                if _WEEKDAYS.index(period) == anchor.weekday():
                    return anchor, "day", False
            return _weekday(anchor, period, which == "next"), "day", False
        if which == "this":
            gran: Granularity = period  # type: ignore[assignment]
            return (_monday(anchor) if period == "week" else anchor), gran, False
        got = _dateparser_parse(f"{which} {period}", base, prefer)
        if got is None:
            return None
        d = got.date()
        if period == "week":
            return _monday(d), "week", False
        return d, period, False  # type: ignore[return-value]

    m = re.fullmatch(rf"(?:in )?({_NUM}) ({_UNIT})(?: ago)?", p)
    if m:
        n, vague = _count(m.group(1))
        unit = m.group(2).rstrip("s")
        ago = p.endswith(" ago")
        if unit == "weekend":
            sat = _weekend(anchor, "last" if ago else "next", not ago)
            return sat + timedelta(days=7 * (n - 1) * (-1 if ago else 1)), "weekend", vague
        phrase_for_parser = f"{n} {unit}s ago" if ago else f"in {n} {unit}s"
        got = _dateparser_parse(phrase_for_parser, base, prefer)
        if got is None:
            return None
        d = got.date()
        if unit == "week":
            return _monday(d), "week", vague
        return d, unit, vague  # type: ignore[return-value]

    m = re.fullmatch(rf"on ({_WD})", p)
    if m:
        # Bare weekday: the nearest one in the direction of the tense (a week
        # away if it names the anchor's own weekday; that would be "today").
        return _weekday(anchor, m.group(1), future), "day", False

    got = _dateparser_parse(p, base, prefer)
    return (got.date(), "day", False) if got is not None else None


def _weekday(anchor: date, name: str, forward: bool) -> date:
    """The nearest ``name`` strictly before (or after) the anchor day."""
    target = _WEEKDAYS.index(name)
    if forward:
        return anchor + timedelta(days=(target - anchor.weekday() - 1) % 7 + 1)
    return anchor - timedelta(days=(anchor.weekday() - target - 1) % 7 + 1)


_MONTH_NAMES = "|".join(vocab.MONTHS)
# Calendar dates written without a year: "2 June", "June 2nd", "in January", "since March".
# "May" alone is far more often the verb, so a bare month needs a preposition before it;
# a year after it ("June 2023") makes it absolute already.
_NO_YEAR = r"(?!,?\s*(?:\d{4}|'\d\d)\b)"
_CALENDAR = re.compile(
    rf"\b(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH_NAMES})\b{_NO_YEAR}"
    rf"|\b(?P<m2>{_MONTH_NAMES})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b{_NO_YEAR}"
    rf"|\b(?P<pre>(?i:in|by|on|of|to|since|until|till|early|late|after|before|during))\s+"
    rf"(?P<m3>{_MONTH_NAMES})\b(?!\s+\d){_NO_YEAR}"
)


def _nearest_year(anchor: date, month: int, day: int, future: bool | None) -> date | None:
    """The occurrence of (month, day) nearest the anchor; ``future`` True/False forces a side."""
    options = []
    for year in (anchor.year - 1, anchor.year, anchor.year + 1):
        try:
            options.append(date(year, month, day))
        except ValueError:  # 29 February
            continue
    if future is False:
        options = [d for d in options if d <= anchor] or options
    elif future is True:
        options = [d for d in options if d >= anchor] or options
    return min(options, key=lambda d: abs((d - anchor).days)) if options else None


def _calendar_dates(text: str, day: date) -> list[ResolvedDate]:
    out: list[ResolvedDate] = []
    for m in _CALENDAR.finditer(text):
        month_name = m.group("m1") or m.group("m2") or m.group("m3")
        month = vocab.MONTHS.index(month_name) + 1
        number = m.group("d1") or m.group("d2")
        left = max(text.rfind(c, 0, m.start()) for c in ".!?\n") + 1
        ends = [i for i in (text.find(c, m.end()) for c in ".!?\n") if i >= 0]
        future = _FUTURE_CUES.search(text, left, min(ends, default=len(text))) is not None
        if number is not None:
            value = _nearest_year(day, month, int(number), True if future else None)
            if value is None:
                continue
            out.append(ResolvedDate(m.group(0), m.start(), m.end(), value, "day"))
            continue
        # "since January" looks back; "in May" is the nearest May either way.
        past = (m.group("pre") or "").lower() == "since"
        value = _nearest_year(day, month, 1, False if past else (True if future else None))
        if value is None:
            continue
        if not past and value.year < day.year and value.month == day.month:
            value = date(day.year, month, 1)  # the month we are in
        start = m.start("m3")
        out.append(ResolvedDate(m.group("m3"), start, m.end(), value, "month"))
    return out


def find_relative_dates(text: str, anchor: date | datetime | None, *,
                        calendar: bool = True) -> list[ResolvedDate]:
    """Every relative date phrase in ``text`` that resolves against ``anchor``.

    With ``calendar`` (the default), dates written without a year ("2 June",
    "since January") count too: they are placed in the year nearest the
    anchor ("since" looks back).
    """
    if anchor is None or not text:
        return []
    day = anchor.date() if isinstance(anchor, datetime) else anchor
    found: list[ResolvedDate] = []
    if calendar:
        found.extend(_calendar_dates(text, day))
    for m in _CANDIDATE.finditer(text):
        # Tense decides ambiguous phrases ("on Friday"); judge it per sentence.
        left = max(text.rfind(c, 0, m.start()) for c in ".!?\n") + 1
        ends = [i for i in (text.find(c, m.end()) for c in ".!?\n") if i >= 0]
        right = min(ends, default=len(text))
        future = _FUTURE_CUES.search(text, left, right) is not None
        hit = resolve_phrase(m.group(0), day, future)
        if hit is not None:
            value, gran, vague = hit
            found.append(ResolvedDate(m.group(0), m.start(), m.end(), value, gran, vague))
    found.sort(key=lambda r: r.start)
    return found


def annotate_dates(text: str, anchor: date | datetime | None) -> tuple[str, list[ResolvedDate]]:
    """``text`` with each relative phrase followed by ``(absolute date)``.

    "I went to a support group yesterday" anchored on 2023-05-08 becomes
    "I went to a support group yesterday (2023-05-07)". Phrases already
    followed by a bracket are left alone so that annotating twice is harmless.
    """
    found = find_relative_dates(text, anchor)
    if not found:
        return text, []
    parts: list[str] = []
    pos = 0
    kept: list[ResolvedDate] = []
    for r in found:
        if text[r.end : r.end + 2].lstrip().startswith("("):
            continue
        parts.append(text[pos : r.end])
        parts.append(f" ({r.label})")
        pos = r.end
        kept.append(r)
    parts.append(text[pos:])
    return "".join(parts), kept
