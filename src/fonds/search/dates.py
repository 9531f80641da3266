"""Date values in queries and documents: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, ISO-8601 timestamps
and Solr's date math (`NOW`, `NOW-1DAY`, `NOW/DAY`, `2024-01-01T00:00:00Z+1MONTH`)."""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re

Interval = tuple[dt.datetime, dt.datetime]

_YEAR = re.compile(r"^(\d{4})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
# Solr allows math after NOW or after a timestamp written in UTC with a `Z`.
_MATH_BASE = re.compile(r"^(NOW|\d{4}-\d{2}-\d{2}T[\d:.]+Z)((?:[+-]\d+[A-Z]+|/[A-Z]+)*)$")
_MATH_STEP = re.compile(r"([+-])(\d+)([A-Z]+)|/([A-Z]+)")
_UNITS = {
    "YEAR": "year",
    "MONTH": "month",
    "DAY": "day",
    "DATE": "day",
    "HOUR": "hour",
    "MINUTE": "minute",
    "SECOND": "second",
}
_ROUNDED_FIELDS = ("month", "day", "hour", "minute", "second", "microsecond")


def parse_date_interval(text: str, now: dt.datetime | None = None) -> Interval | None:
    """The instants a date value covers, as [start, end): `2024` is the whole year, `2024-05`
    the month, `2024-05-01` the day; a timestamp (UTC unless it says otherwise) or a date-math
    expression is its one second. None if `text` is none of these."""
    if now is None and "NOW" not in text.upper():
        return _fixed_interval(text)
    return _interval(text, now)


@functools.lru_cache(maxsize=4096)
def _fixed_interval(text: str) -> Interval | None:
    """A value not relative to now, parsed once: the indexer parses every date of every document
    (a record's audit timestamps, the same second for a whole batch) twice."""
    return _interval(text, None)


def _interval(text: str, now: dt.datetime | None) -> Interval | None:
    try:
        if (interval := _calendar_interval(text)) is not None:
            return interval
        if m := _MATH_BASE.match(text.upper()):
            instant = _date_math(m[1], m[2], now or dt.datetime.now(dt.UTC))
        elif "T" in text or " " in text:
            instant = dt.datetime.fromisoformat(text)
        else:
            return None
    except (ValueError, OverflowError):
        return None
    instant = instant if instant.tzinfo else instant.replace(tzinfo=dt.UTC)
    instant = instant.astimezone(dt.UTC).replace(microsecond=0)
    return instant, instant + dt.timedelta(seconds=1)


def _calendar_interval(text: str) -> Interval | None:
    if m := _YEAR.match(text):
        start = dt.datetime(int(m[1]), 1, 1, tzinfo=dt.UTC)
        return start, start.replace(year=start.year + 1) if start.year < dt.MAXYEAR else dt.datetime.max.replace(tzinfo=dt.UTC)
    if m := _MONTH.match(text):
        start = dt.datetime(int(m[1]), int(m[2]), 1, tzinfo=dt.UTC)
        return start, start + dt.timedelta(days=calendar.monthrange(start.year, start.month)[1])
    if m := _DAY.match(text):
        start = dt.datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=dt.UTC)
        return start, start + dt.timedelta(days=1)
    return None


def _date_math(base: str, steps: str, now: dt.datetime) -> dt.datetime:
    instant = now if base == "NOW" else dt.datetime.fromisoformat(base)
    for sign, amount, unit, rounding in _MATH_STEP.findall(steps):
        name = _unit(rounding or unit)
        instant = _round(instant, name) if rounding else _add(instant, name, int(amount) * (-1 if sign == "-" else 1))
    return instant


def _unit(word: str) -> str:
    name = _UNITS.get(word.removesuffix("S"))
    if name is None:
        raise ValueError(f"unknown date-math unit {word}")
    return name


def _add(instant: dt.datetime, unit: str, amount: int) -> dt.datetime:
    if unit in ("year", "month"):
        months = instant.year * 12 + instant.month - 1 + (amount * 12 if unit == "year" else amount)
        year, month = divmod(months, 12)
        day = min(instant.day, calendar.monthrange(year, month + 1)[1])
        return instant.replace(year=year, month=month + 1, day=day)
    return instant + dt.timedelta(**{unit + "s": amount})


def _round(instant: dt.datetime, unit: str) -> dt.datetime:
    """`/DAY` and friends: down to the start of the unit, as Solr rounds."""
    smaller = _ROUNDED_FIELDS[_ROUNDED_FIELDS.index(unit) + 1 :] if unit != "year" else _ROUNDED_FIELDS
    return instant.replace(**{field: (1 if field in ("month", "day") else 0) for field in smaller})
