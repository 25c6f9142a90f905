"""Sizes as tools write them (`16gb`, `1.8T`, `460Gi`, `2.00 GiB`) read into bytes; bytes shown.

Each tool has its own convention, so each has its own reader: docker's units are powers of 1024
whatever the spelling (`16g`, `16gb`, `16GiB`); df's human sizes are powers of 1024 (`df -h`) or
of 1000 (`df -H`), which the caller must know; torch prints binary units, `GB` included. Shown
sizes use binary units (`1.0 GiB`), as the tools themselves print them.
"""

from __future__ import annotations

import math
import re

_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6, "Z": 7, "Y": 8}
"""Unit letter -> power of 1024 (or of 1000)."""

_DOCKER_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?) ?([kmgtp]?)i?b?$", re.IGNORECASE)
# `1.8T` (GNU), `460Gi` / `512Bi` (macOS), `8.2k` (GNU -H), `1,8G` (a comma locale), counts.
_HUMAN_SIZE_RE = re.compile(r"^(\d+(?:[.,]\d+)?)(?:([KMGTPEZY])i?B?|Bi|B)?$", re.IGNORECASE)


def unit_bytes(letter: str, base: int = 1024) -> int:
    """Bytes in one unit named by its letter (`K`, `m`, `G`...; `` for bytes); KeyError if none."""
    return int(base ** _POWERS[letter.upper()])


def docker_size(value: object) -> int | None:
    """Bytes from a docker size (`16gb`, `8G`, `'2g'`, `8589934592`); powers of 1024.

    An int is taken as bytes already (a JSON `ShmSize`); a bool or anything unreadable is None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    found = _DOCKER_SIZE_RE.match(value.strip().strip("'\""))
    if not found:
        return None
    number, unit = found.groups()
    return _whole(float(number) * unit_bytes(unit))


def _whole(size: float) -> int | None:
    """Bytes as an int; None when the digits overflowed a float (`int(inf)` raises)."""
    return int(size) if math.isfinite(size) else None


def is_human_size(token: str) -> bool:
    """Whether `token` reads as a human size or a plain count (`1.8T`, `460Gi`, `4096`)."""
    return _HUMAN_SIZE_RE.match(token) is not None


def human_size(token: str, block_bytes: int | None = None, si: bool = False) -> int | None:
    """Bytes of a human size (`1.8T`), or of a plain count of `block_bytes` blocks.

    `si` reads the unit letters as powers of 1000 (`df -H`); a plain number with no
    `block_bytes` is bytes. `-` (no value) and anything unreadable give None.
    """
    if token == "-":
        return None
    found = _HUMAN_SIZE_RE.match(token)
    if not found:
        return None
    number = float(found.group(1).replace(",", "."))
    unit = found.group(2) or ""
    if block_bytes is not None and not unit:
        return _whole(number * block_bytes)
    return _whole(number * unit_bytes(unit, 1000 if si else 1024))


_TORCH_UNITS = {"b": 1, "bytes": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_TORCH_UNITS |= {"kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}


def to_bytes(number: str, unit: str) -> int | None:
    """`2.00`, `GiB` -> bytes, as torch prints sizes (binary units, `KB` ... `TB` included).

    None when the number overflows a float. An unknown unit raises KeyError: the caller's
    pattern names the units it lets through.
    """
    size = float(number) * _TORCH_UNITS[unit.lower()]
    return round(size) if math.isfinite(size) else None


def human_bytes(size: float) -> str:
    """1073741824 -> '1.0 GiB' (binary units, as the tools themselves print)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
