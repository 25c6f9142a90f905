"""Cell values as command-line tools print them: a count with its unit, a yes/no word.

Tools print `N/A`, `[Not Supported]` or `Unknown Error` where a number or a flag should be;
these readers return None for anything they do not recognise instead of guessing.
"""

from __future__ import annotations

import re

_NUMBER_WITH_UNIT_RE = re.compile(r"^(?P<n>-?\d+(?:\.\d+)?)(?:\s*\S+)?$")

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
    return int(found.group("n"))


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
