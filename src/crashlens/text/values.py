"""Numbers and cell values as command-line tools print them, read without ever raising.

Tools print `N/A`, `[Not Supported]` or `Unknown Error` where a number or a flag should be;
these readers return None for anything they do not recognise instead of guessing.

A garbled log may also hold an absurd number: Python's `int()` refuses more than 4300 digits
(ValueError), `float()` turns 400 digits into `inf`, and `int(inf)` raises OverflowError. One
such value must cost that value only, never the whole input, so every number read from input
text goes through `bounded_int` / `finite_float` / `int_of_float`, which say None instead.
"""

from __future__ import annotations

import math
import re

_NUMBER_WITH_UNIT_RE = re.compile(r"^(?P<n>-?\d+(?:\.\d+)?)(?:\s*\S+)?$")

MAX_DIGITS = 20
"""Digits of the longest integer a tool prints (2**64 has 20): a longer run is not a count."""
MAX_FLOAT_CHARS = 64
"""Characters of the longest decimal number a tool prints (a nanosecond epoch has 20)."""

_YES = frozenset({"yes", "true", "active", "1"})
_NO = frozenset({"no", "false", "not active", "0"})


def int_with_unit(value: str | None) -> int | None:
    """`40536 MiB`, `0`, `2296 MiB` -> int; `N/A`, `[N/A]`, `1.5 W`, `10052...` -> None.

    A decimal is not a count, so it gives None rather than a rounded int.
    """
    if value is None:
        return None
    found = _NUMBER_WITH_UNIT_RE.match(value.strip())
    if not found or "." in found.group("n"):
        return None
    return bounded_int(found.group("n"))


def bounded_int(text: str | None, max_digits: int = MAX_DIGITS) -> int | None:
    """What `int(text)` gives (`42`, ` -7 `), or None: not an integer, or over `max_digits`."""
    if text is None:
        return None
    stripped = text.strip()
    if len(stripped.lstrip("+-")) > max_digits:
        return None
    try:
        return int(stripped)
    except ValueError:
        return None


def finite_float(text: str | None, max_chars: int = MAX_FLOAT_CHARS) -> float | None:
    """What `float(text)` gives (`1.5`, `2e3`), or None: not a number, not finite, too long."""
    if text is None:
        return None
    stripped = text.strip()
    if len(stripped) > max_chars:
        return None
    try:
        value = float(stripped)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def int_of_float(value: float | None) -> int | None:
    """`int(value)` (toward zero), or None for None, an infinity or NaN (`int()` would raise)."""
    if value is None or not math.isfinite(value):
        return None
    return int(value)


def yes_no(value: str | None) -> bool | None:
    """Yes/No, True/False, 1/0 and Active/Not Active -> bool; anything else -> None."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in _YES:
        return True
    if lowered in _NO:
        return False
    return None
