"""The prefixes launchers stack in front of a message, peeled off one by one.

`[rank3]:` / `[default3]:` / `3: ` (rank), pdsh `node-02: ` and NCCL `host:pid:tid ` (host),
deepspeed `[2025-03-14 10:02:04,122] ` (a wall time) and glog `E0325 20:57:27.620000 2606
file.py:869] ` / `[E314 12:40:11.274431018 ProcessGroupNCCL.cpp:616] ` (a time without a year:
`GLOG_YEAR` stands in, and the line's clock says `yearless`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from crashlens.model import Clock
from crashlens.parsers.base import Split
from crashlens.text.times import PLACEHOLDER_YEAR, fraction, plausible_time, utc_epoch
from crashlens.text.values import bounded_int

GLOG_YEAR = PLACEHOLDER_YEAR
"""glog prefixes carry month and day only; a fixed (leap) year keeps one file's times ordered."""

_RANK_PREFIX = re.compile(r"\[(?:rank|default)([0-9]+)\]:[ ]?")
_TEE_PREFIX = re.compile(r"([0-9]{1,5}): ")
_PDSH_AT = re.compile(r"pdsh@[^ :\t]+: ")
_HOST_PREFIX = re.compile(r"(?<![a-z0-9._-])([a-z0-9][a-z0-9._-]*): ")
# `(?<!...)`: a search starting inside a host name would rescan it (n^2 on a long token)
_NCCL_HOST = re.compile(r"(?<![^ \t:\[\]])([^ \t:\[\]]+):[0-9]+:[0-9]+ (?=\[[0-9]+\] )")
_STREAM_PREFIX = re.compile(r"(?:stdout|stderr): ")
_DS_TIME = re.compile(
    r"\[([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[,.]([0-9]{1,6}))?\] ?"
)
_GLOG = re.compile(
    r"([IWEF])([0-9]{3,4}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{1,9}) +[0-9]+ "
    r"[^ \]]+:[0-9]+\] ?"
)
_GLOG_BRACKET = re.compile(
    r"\[([IWEF])([0-9]{3,4}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{1,9})(?: [0-9]+)? "
    r"[^ \]]+:[0-9]+\] ?"
)
_GLOG_BRACKET_NODATE = re.compile(r"\[[IWEF] [^ \]]+:[0-9]+\] ?")
_NOT_HOSTS = re.compile(r"(?:rank|default|epoch|step|iter|batch|gpu|cuda|line)[0-9]*")


def _epoch(year: int, month: int, day: int, hh: int, mm: int, ss: int) -> float | None:
    """UTC epoch seconds, or None for an impossible date (then the prefix is not a timestamp)."""
    if not plausible_time(month, day, hh, mm, ss):
        return None
    return utc_epoch(year, month, day, hh, mm, ss)


def _glog_time(match: re.Match[str]) -> float | None:
    """glog packs month and day into `MMDD` (C++ torch drops the month's leading zero)."""
    packed = match.group(2)
    base = _epoch(
        GLOG_YEAR,
        int(packed[:-2]),
        int(packed[-2:]),
        int(match.group(3)),
        int(match.group(4)),
        int(match.group(5)),
    )
    return None if base is None else base + fraction(match.group(6))


def _ds_time(match: re.Match[str]) -> float | None:
    base = _epoch(*(int(match.group(i)) for i in range(1, 7)))
    return None if base is None else base + fraction(match.group(7))


@dataclass
class _Prefixes:
    """What the prefixes of one line said, filled in as they are peeled off."""

    rank: int | None = None
    host: str | None = None
    timestamp: float | None = None
    clock: Clock | None = None


_PEELERS = (
    _RANK_PREFIX,
    _GLOG,
    _GLOG_BRACKET,
    _GLOG_BRACKET_NODATE,
    _DS_TIME,
    _NCCL_HOST,
    _PDSH_AT,
    _STREAM_PREFIX,
    _TEE_PREFIX,
    _HOST_PREFIX,
)
"""Known line prefixes, in the order they are tried."""
_ANY_PREFIX = re.compile("|".join(f"(?P<p{i}>{rx.pattern})" for i, rx in enumerate(_PEELERS)))
"""All of them in one alternation: `re` tries the branches in order, as `_peel` would, so one
call finds which prefix (if any) opens the line instead of up to ten failed matches."""


def _peel(text: str, found: _Prefixes) -> str | None:
    """Remove one known prefix from `text`, recording it; None when no prefix is left."""
    opening = _ANY_PREFIX.match(text)
    if opening is None or opening.lastgroup is None:
        return None
    peeler = _PEELERS[int(opening.lastgroup[1:])]
    m = peeler.match(text)
    if m is None:  # pragma: no cover - the alternation just matched this branch
        return None
    if peeler is _RANK_PREFIX or peeler is _TEE_PREFIX:
        found.rank = bounded_int(m.group(1))
    elif peeler is _GLOG or peeler is _GLOG_BRACKET:
        found.timestamp, found.clock = _glog_time(m), Clock.YEARLESS
        if found.timestamp is None:
            return None
    elif peeler is _DS_TIME:
        found.timestamp, found.clock = _ds_time(m), Clock.WALL
        if found.timestamp is None:
            return None
    elif peeler is _NCCL_HOST:
        found.host = m.group(1)
    elif peeler is _HOST_PREFIX:
        if not _looks_like_host(m.group(1)):
            return None
        found.host = m.group(1)
    return text[m.end() :]


def _looks_like_host(token: str) -> bool:
    """pdsh host names: lower-case with a digit or a hyphen (logger names and words have none)."""
    if not any(c.isdigit() or c == "-" for c in token):
        return False
    return _NOT_HOSTS.fullmatch(token) is None


_MEMO_LINE = 1024
"""Lines up to this long are remembered (`_split_remembered`): logs repeat lines by the
thousand (every rank's identical warning, a watchdog line per collective), and a longer
line is rarely repeated and would hold its memory in the cache."""


def split_launcher_line(raw: str) -> Split:
    """Peel stacked prefixes (`node-02: [rank3]:[E314 ...] msg`) off a cleaned line."""
    if len(raw) <= _MEMO_LINE:
        return _split_remembered(raw)
    return _split(raw)


def _split(raw: str) -> Split:
    found = _Prefixes()
    text = raw
    for _ in range(8):  # a bound: each step consumes at least one character anyway
        rest = _peel(text, found)
        if rest is None or rest == text:
            break
        text = rest
    clock = found.clock if found.timestamp is not None else None
    return Split(
        text=text, rank=found.rank, host=found.host, timestamp=found.timestamp, clock=clock
    )


_split_remembered = lru_cache(maxsize=4096)(_split)
"""`_split` of short lines, remembered: a `Split` is frozen, so a repeated line can share one."""
