"""text.times: printed time fields into epoch seconds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from crashlens.text.times import (
    PLACEHOLDER_YEAR,
    fraction,
    month_number,
    plausible_time,
    utc_epoch,
    zone_seconds,
)


def test_utc_epoch_agrees_with_datetime() -> None:
    expected = datetime(2025, 3, 14, 10, 2, 4, tzinfo=UTC).timestamp()
    assert utc_epoch(2025, 3, 14, 10, 2, 4) == expected


def test_placeholder_year_keeps_february_29() -> None:
    assert (
        utc_epoch(PLACEHOLDER_YEAR, 2, 29, 0, 0, 0)
        == datetime(PLACEHOLDER_YEAR, 2, 29, tzinfo=UTC).timestamp()
    )


def test_impossible_month_is_none_and_a_day_too_many_rolls_over() -> None:
    assert utc_epoch(2025, 13, 1, 0, 0, 0) is None
    assert utc_epoch(2025, 2, 29, 0, 0, 0) == utc_epoch(2025, 3, 1, 0, 0, 0)


@pytest.mark.parametrize(
    ("fields", "plausible"),
    [((3, 14, 23, 59, 61), True), ((13, 1, 0, 0, 0), False), ((3, 32, 0, 0, 0), False),
     ((3, 1, 24, 0, 0), False), ((0, 1, 0, 0, 0), False)],
)  # fmt: skip
def test_plausible_time(fields: tuple[int, int, int, int, int], plausible: bool) -> None:
    assert plausible_time(*fields) is plausible


@pytest.mark.parametrize("digits", ["1", "122", "274431018", "000001", "999999999"])
def test_fraction_is_the_decimal_value(digits: str) -> None:
    assert fraction(digits) == int(digits) / 10 ** len(digits)


def test_fraction_of_nothing_and_of_too_many_digits() -> None:
    assert fraction(None) == 0.0 and fraction("") == 0.0
    assert fraction("5" * 5000) == pytest.approx(5 / 9)  # int() would refuse 5000 digits


@pytest.mark.parametrize(
    ("zone", "seconds"),
    [(None, 0), ("Z", 0), ("+01:00", 3600), ("-0500", -18000), ("+0530", 19800)],
)
def test_zone_seconds(zone: str | None, seconds: int) -> None:
    assert zone_seconds(zone) == seconds


@pytest.mark.parametrize(
    ("token", "month"),
    [("Mar", 3), ("mar.", 3), ("nov.", 11), ("févr.", 2), ("Mär", 3), ("dic", 12), ("Foo", None)],
)
def test_month_number(token: str, month: int | None) -> None:
    assert month_number(token) == month
