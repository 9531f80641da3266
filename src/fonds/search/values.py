"""Reading the values a query names: escaped words with wildcards, integers, booleans, dates."""

from __future__ import annotations

import datetime as dt
import re
from enum import Enum


class Wildcard(Enum):
    ANY_STRING = "*"
    ANY_CHAR = "?"


# A word as literal runs and the wildcards between them.
Segments = list[str | Wildcard]


def split_word(raw: str) -> Segments:
    """Unescape a query word into literal runs and its unescaped wildcards, e.g.
    `ab\\*c*` -> ['ab*c', Wildcard.ANY_STRING]."""
    segments: Segments = []
    literal: list[str] = []
    chars = iter(raw)
    for char in chars:
        if char == "\\":
            literal.append(next(chars, "\\"))
        elif char in "*?":
            if literal:
                segments.append("".join(literal))
                literal = []
            segments.append(Wildcard(char))
        else:
            literal.append(char)
    if literal:
        segments.append("".join(literal))
    return segments


def unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw)


def parse_integer(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    # tantivy holds i64: a bigger number cannot be stored, so it cannot be asked for either.
    return value if -(2**63) <= value < 2**63 else None


def parse_boolean(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.lower())


_YEAR = re.compile(r"^(\d{4})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def parse_date_interval(text: str) -> tuple[dt.datetime, dt.datetime] | None:
    """The instants a date value covers, as [start, end): `2024` is the whole year, `2024-05`
    the month, `2024-05-01` the day, a full ISO-8601 timestamp its one second (UTC if no
    offset is given). None if `text` is none of these."""
    try:
        if m := _YEAR.match(text):
            start = dt.datetime(int(m[1]), 1, 1, tzinfo=dt.UTC)
            return start, start.replace(year=start.year + 1)
        if m := _MONTH.match(text):
            start = dt.datetime(int(m[1]), int(m[2]), 1, tzinfo=dt.UTC)
            return start, (start + dt.timedelta(days=32)).replace(day=1)
        if m := _DAY.match(text):
            start = dt.datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=dt.UTC)
            return start, start + dt.timedelta(days=1)
        if "T" not in text and " " not in text:
            return None
        instant = dt.datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        return None
    instant = instant if instant.tzinfo else instant.replace(tzinfo=dt.UTC)
    instant = instant.astimezone(dt.UTC).replace(microsecond=0)
    return instant, instant + dt.timedelta(seconds=1)
