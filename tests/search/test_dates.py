"""Date values as queries and documents give them: calendar precision, timestamps, date math."""

from __future__ import annotations

import datetime as dt

import pytest

from fonds.search.dates import parse_date_interval

NOW = dt.datetime(2026, 3, 31, 15, 45, 30, 123456, tzinfo=dt.UTC)


def utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2024", utc(2024, 1, 1), utc(2025, 1, 1)),
        ("2024-02", utc(2024, 2, 1), utc(2024, 3, 1)),
        ("2024-12", utc(2024, 12, 1), utc(2025, 1, 1)),
        ("9999", utc(9999, 1, 1), dt.datetime.max.replace(tzinfo=dt.UTC)),
        ("2024-02-29", utc(2024, 2, 29), utc(2024, 3, 1)),
        ("2024-06-30T12:00:00+02:00", utc(2024, 6, 30, 10), utc(2024, 6, 30, 10, 0, 1)),
        ("2024-06-30T10:00:00Z", utc(2024, 6, 30, 10), utc(2024, 6, 30, 10, 0, 1)),
        ("2024-06-30T10:00:00.999", utc(2024, 6, 30, 10), utc(2024, 6, 30, 10, 0, 1)),
        ("NOW", utc(2026, 3, 31, 15, 45, 30), utc(2026, 3, 31, 15, 45, 31)),
        ("now/DAY", utc(2026, 3, 31), utc(2026, 3, 31, 0, 0, 1)),
        ("NOW-1DAY/DAY", utc(2026, 3, 30), utc(2026, 3, 30, 0, 0, 1)),
        ("NOW-1MONTH", utc(2026, 2, 28, 15, 45, 30), utc(2026, 2, 28, 15, 45, 31)),
        ("NOW+2YEARS/YEAR", utc(2028, 1, 1), utc(2028, 1, 1, 0, 0, 1)),
        ("NOW-90MINUTES/HOUR", utc(2026, 3, 31, 14), utc(2026, 3, 31, 14, 0, 1)),
        ("2024-01-31T00:00:00Z+1MONTH", utc(2024, 2, 29), utc(2024, 2, 29, 0, 0, 1)),
    ],
)
def test_date_intervals(text, start, end):
    assert parse_date_interval(text, now=NOW) == (start, end)


@pytest.mark.parametrize(
    "text",
    ["yesterday", "2024-13", "2024-02-30", "24", "20240101", "NOW-1FORTNIGHT", "NOW+99999999999YEARS", "NOW-1", "2024-01-01+1DAY", ""],
)
def test_not_dates(text):
    assert parse_date_interval(text, now=NOW) is None
