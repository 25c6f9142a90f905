"""Turning the pieces of a printed time into epoch seconds, the way logs print them.

Log prefixes give a time as separate fields (`Mar 25 20:57:27.62`, `[2025-03-14 10:02:04,122]`,
`2024-05-01T10:00:00,123456+02:00`); these helpers put the fields together. Zone-less times are
read as UTC. Times printed without a year get `PLACEHOLDER_YEAR`: the parser that does so marks
the time `Clock.YEARLESS` (see `crashlens.model.Clock`).
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

PLACEHOLDER_YEAR = 2000
"""The year given to times printed without one (glog, syslog). A leap year, so `Feb 29` still
reads; the times of one file keep their order, but the date is not the real one."""

_MONTHS = {
    # English, then the other locales `dmesg -T` prints in (keys: lower case, dots removed).
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
    "sep": 9, "oct": 10, "nov": 11, "dec": 12,
    "janv": 1, "févr": 2, "fevr": 2, "mars": 3, "avr": 4, "mai": 5, "juin": 6, "juil": 7,
    "août": 8, "aout": 8, "sept": 9, "déc": 12,
    "jän": 1, "mär": 3, "mrz": 3, "okt": 10, "dez": 12,
    "ene": 1, "abr": 4, "ago": 8, "dic": 12,
    "gen": 1, "mag": 5, "giu": 6, "lug": 7, "set": 9, "ott": 10,
    "fev": 2, "out": 10,
}  # fmt: skip


def month_number(token: str) -> int | None:
    """1-12 for an abbreviated month name (English, French, German, Spanish, Italian,
    Portuguese; any case, a trailing dot allowed), None for anything else."""
    return _MONTHS.get(token.lower().rstrip("."))


def utc_epoch(year: int, month: int, day: int, hh: int, mm: int, ss: int) -> float | None:
    """Epoch seconds of a UTC time; None when the fields make no date `timegm` accepts.

    Like `timegm`, an out-of-range day or hour rolls over (`Feb 30` is `Mar 1`); callers that
    guessed the fields from digits check them first with `plausible_time`.
    """
    try:
        return float(calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0)))
    except (ValueError, OverflowError):
        return None


def utc_datetime(timestamp: float) -> datetime | None:
    """The UTC datetime of epoch seconds; None outside what `datetime` can hold (year 1 to
    9999), for an infinity or NaN: a garbled log can print any number where a time goes."""
    try:
        return datetime.fromtimestamp(timestamp, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def plausible_time(month: int, day: int, hh: int, mm: int, ss: int) -> bool:
    """Whether the fields can be a calendar time (seconds up to 61: leap seconds)."""
    return 1 <= month <= 12 and 1 <= day <= 31 and hh < 24 and mm < 60 and ss < 62


def fraction(digits: str | None) -> float:
    """The value of the digits after a decimal point or comma (`"122"` -> 0.122).

    Read as a float literal, not `int(digits) / 10**n` (the same value): `int` refuses more
    than 4300 digits, and a garbled log may print that many.
    """
    return float(f"0.{digits}") if digits else 0.0


def zone_seconds(zone: str | None) -> int:
    """Offset east of UTC of `+01:00` / `-0500` / `Z` / None, in seconds."""
    if not zone or zone == "Z":
        return 0
    digits = zone[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:4]) * 60
    return -seconds if zone[0] == "-" else seconds
