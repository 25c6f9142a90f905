"""When the failure happened, in wall-clock time, read from the clocks the parsers set.

A time is only compared with times of its own clock (`model.Clock`). `boot` times (raw dmesg)
never give a date. A `yearless` time (glog `E0325 ...`, syslog `Mar 25 ...`) carries the
parser's placeholder year; it is moved into the year of a dated failure line of the same
inputs, else of torchelastic's root-cause report, else of a hint the caller knows (a scan
passes the job's newest file time). This is the only place a year is repaired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from crashlens.model import Category, Clock, Fact, Hit, Role
from crashlens.text.times import utc_datetime

DATED = (Clock.WALL, Clock.YEARLESS)
"""Clocks whose times are dates (a yearless one once its year is known)."""


@dataclass(frozen=True, slots=True)
class FailureTime:
    """When the run failed, and the year its yearless times belong to."""

    at: float | None
    """Epoch seconds (UTC) of the first failure line; None when no failure line is dated."""
    yearless_year: int | None
    """The year yearless times are placed in; None when nothing dated tells it."""


def failure_time(
    first_failure: Hit | None,
    hits: Sequence[Hit],
    facts: Sequence[Fact],
    category: Category | None,
    year_hint: float | None = None,
) -> FailureTime:
    """When the failure happened, in order of trust: the first failure line; torchelastic's
    root-cause time; the earliest dated line of the top cause (`category`); the earliest dated
    failure line. A yearless time gets the year of the earliest dated failure line, else of
    torchelastic's report, else of `year_hint`."""
    elastic = _elastic_time(facts)
    failures = [h for h in hits if h.role is not Role.CONTEXT and _dated(h)]
    wall = [h.timestamp for h in failures if h.clock is Clock.WALL and h.timestamp]
    reference = min(wall) if wall else elastic if elastic is not None else year_hint
    moment = utc_datetime(reference) if reference is not None else None
    year = moment.year if moment is not None else None
    first = first_failure if first_failure is not None and _dated(first_failure) else None
    own = [h for h in failures if h.category is category and h.timestamp]
    every = [h for h in failures if h.timestamp]
    candidates: list[tuple[float, Clock | None] | None] = [
        (first.timestamp, first.clock) if first is not None and first.timestamp else None,
        (elastic, Clock.WALL) if elastic is not None else None,
        _earliest(own),
        _earliest(every),
    ]
    for candidate in candidates:
        if candidate is None:
            continue
        value, clock = candidate
        if clock is not Clock.YEARLESS:
            return FailureTime(value, year)
        at = _rebase(value, reference) if reference is not None else None
        return FailureTime(at, year)
    return FailureTime(None, year)


def _dated(hit: Hit) -> bool:
    return hit.timestamp is not None and hit.clock in DATED


def _earliest(hits: Sequence[Hit]) -> tuple[float, Clock | None] | None:
    # A yearless time sits in the placeholder year, before every real date: it wins here and
    # is then moved into its real year.
    first = min(hits, key=lambda h: h.timestamp or 0.0, default=None)
    return (first.timestamp, first.clock) if first is not None and first.timestamp else None


def _rebase(value: float, reference: float) -> float:
    """Put a yearless time in the year of `reference` (the year before, if it would be later)."""
    when, around = utc_datetime(value), utc_datetime(reference)
    if when is None or around is None:
        return value  # out of the calendar's range: left where it is
    year = around.year
    for candidate in (year, year - 1):
        try:
            moved = when.replace(year=candidate)
        except ValueError:  # 29 February
            moved = when.replace(year=candidate, day=28)
        if moved.timestamp() <= reference + 86400 or candidate != year:
            return moved.timestamp()
    return value  # pragma: no cover


def _elastic_time(facts: Sequence[Fact]) -> float | None:
    """torchelastic's root-cause `time` (`2024-03-20_12:55:16`, the node's local time; read
    as UTC), from the first `launcher.first_failure` fact that has one."""
    for item in facts:
        when = item.attr("time") if item.key == "launcher.first_failure" else None
        if isinstance(when, str):
            return _parse_time(when)
    return None


def _parse_time(text: str) -> float | None:
    for layout in ("%Y-%m-%d_%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), layout).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None
