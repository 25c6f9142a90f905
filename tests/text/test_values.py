"""Cell values as tools print them: counts with units and yes/no words."""

from __future__ import annotations

import pytest

from crashlens.text.values import int_with_unit, yes_no


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("40536 MiB", 40536),
        ("0", 0),
        ("-1", -1),
        ("  2296 MiB ", 2296),
        ("12W", 12),
        ("1.5 W", None),
        ("N/A", None),
        ("[N/A]", None),
        ("[Not Supported]", None),
        ("10052 MiB extra", None),
        ("", None),
        (None, None),
    ],
)
def test_int_with_unit(value: str | None, expected: int | None) -> None:
    assert int_with_unit(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Yes", True),
        (" true ", True),
        ("Active", True),
        ("1", True),
        ("No", False),
        ("Not Active", False),
        ("0", False),
        ("N/A", None),
        ("Enabled", None),
        (None, None),
    ],
)
def test_yes_no(value: str | None, expected: bool | None) -> None:
    assert yes_no(value) is expected
