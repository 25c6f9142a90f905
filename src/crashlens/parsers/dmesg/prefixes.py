"""Kernel-log line prefixes: every time style dmesg, journalctl, syslog and /dev/kmsg print.

| style | example | timestamp | clock |
|---|---|---|---|
| raw dmesg, pstore | `[ 1234.567890] msg`, `<6>[ 1234.5] msg` | seconds since boot | boot |
| /dev/kmsg | `6,1234,5678901,-;msg` (microseconds) | seconds since boot | boot |
| `dmesg -T` | `[Tue Mar 25 20:57:27 2025] msg` (localized months too) | epoch, read as UTC | wall |
| `dmesg --time-format iso` | `2025-03-25T20:57:27,123456+01:00 msg` | epoch | wall |
| `journalctl -o short-iso` | `2025-03-25T20:57:27+0100 host kernel: msg` | epoch | wall |
| syslog, kern.log | `Mar 25 20:57:27 host kernel: msg` | epoch in `SYSLOG_YEAR` | yearless |
| `dmesg --decode` | `kern  :err   : ` before any of the above | | |

Syslog styles keep printk's `[ 34.19]` after `kernel: `; the wall time is kept, the boot
time dropped. Runs of 40+ spaces inside a line (a terminal-wrapped copy/paste) are removed.
"""

from __future__ import annotations

import re

from crashlens.model import Clock
from crashlens.parsers.base import Split
from crashlens.text.times import (
    PLACEHOLDER_YEAR,
    fraction,
    month_number,
    utc_epoch,
    zone_seconds,
)
from crashlens.text.values import bounded_int, finite_float

SYSLOG_YEAR = PLACEHOLDER_YEAR
"""Year given to syslog/journal timestamps that print none (leap year: Feb 29 still parses)."""

DECODE = re.compile(r"^[a-z]+ *:[a-z]+ *: ")
_KMSG = re.compile(r"^\d{1,3},\d+,(\d+),[^;\n]{0,8};")
_PRIO = re.compile(r"^<\d{1,3}>(?=\[)")
_MONO = re.compile(r"^\[ *(\d+\.\d+)\] ?")
_CTIME = re.compile(r"^\[([^\]\s]+) +([^\]\s]+) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\] ?")
_ISO_DMESG = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d),(\d{1,9})([+-]\d\d:?\d\d|Z)? "
)
SYSLOG = re.compile(
    r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(\.\d+)? (\S+) ([^\s:\[]+)(?:\[\d+\])?: ?"
)
JOURNAL_ISO = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?([+-]\d\d:?\d\d|Z)? (\S+) "
    r"([^\s:\[]+)(?:\[\d+\])?: ?"
)
_WRAP_GAP = re.compile(r"(?<=\S) {40,}(?=\S)")


def _epoch(year: int, month: int, day: int, hms: tuple[str, str, str]) -> float | None:
    return utc_epoch(year, month, day, int(hms[0]), int(hms[1]), int(hms[2]))


def _iso_epoch(m: re.Match[str], digits: str, zone: str | None) -> float | None:
    base = _epoch(int(m[1]), int(m[2]), int(m[3]), (m[4], m[5], m[6]))
    if base is None:
        return None
    return base + fraction(digits) - zone_seconds(zone)


def _stamped(text: str, stamp: float | None, clock: Clock, host: str | None = None) -> Split:
    """A split whose clock is set only when the prefix gave a time."""
    return Split(text=text, host=host, timestamp=stamp, clock=None if stamp is None else clock)


def _split_syslog(raw: str) -> Split | None:
    found = SYSLOG.match(raw)
    if not found:
        return None
    month = month_number(found[1])
    stamp = None
    if month is not None:
        stamp = _epoch(SYSLOG_YEAR, month, int(found[2]), (found[3], found[4], found[5]))
        if stamp is not None and found[6]:
            stamp += fraction(found[6][1:])
    return _stamped(_strip_mono(raw[found.end() :]), stamp, Clock.YEARLESS, host=found[7])


def _split_journal_iso(raw: str) -> Split | None:
    found = JOURNAL_ISO.match(raw)
    if not found:
        return None
    stamp = _iso_epoch(found, (found[7] or "")[1:], found[8])
    return _stamped(_strip_mono(raw[found.end() :]), stamp, Clock.WALL, host=found[9])


def _strip_mono(text: str) -> str:
    """kern.log keeps printk's `[  34.19]` after `kernel: `: the wall clock is the better time."""
    found = _MONO.match(text)
    return text[found.end() :] if found else text


def split_kernel_prefix(raw: str) -> Split | None:
    """The prefixes only dmesg-like tools print (no host)."""
    found = _KMSG.match(raw)
    if found:
        micros = bounded_int(found[1])
        return _stamped(
            raw[found.end() :], micros / 1e6 if micros is not None else None, Clock.BOOT
        )
    prio = _PRIO.match(raw)
    rest = raw[prio.end() :] if prio else raw
    found = _MONO.match(rest)
    if found:
        return _stamped(rest[found.end() :], finite_float(found[1]), Clock.BOOT)
    found = _CTIME.match(raw)
    if found:
        month = month_number(found[2])
        stamp = None
        if month is not None:
            stamp = _epoch(int(found[7]), month, int(found[3]), (found[4], found[5], found[6]))
        return _stamped(raw[found.end() :], stamp, Clock.WALL)
    found = _ISO_DMESG.match(raw)
    if found:
        return _stamped(raw[found.end() :], _iso_epoch(found, found[7], found[8]), Clock.WALL)
    return None


def has_kernel_prefix(raw: str) -> bool:
    """Whether `split_kernel_prefix` would split `raw` (without building the split)."""
    if _KMSG.match(raw) or _CTIME.match(raw) or _ISO_DMESG.match(raw):
        return True
    prio = _PRIO.match(raw)
    return _MONO.match(raw[prio.end() :] if prio else raw) is not None


def split_kernel_line(raw: str) -> Split:
    """Remove any kernel-log prefix from a cleaned line (see the module docstring)."""
    decoded = DECODE.match(raw)
    if decoded:
        raw = raw[decoded.end() :]
    split = split_kernel_prefix(raw)
    if split is None and raw[:1].isalnum():
        split = _split_syslog(raw) or _split_journal_iso(raw)
    if split is None:
        split = Split(text=raw)
    if "     " in split.text:
        text = _WRAP_GAP.sub("", split.text)
        if text != split.text:
            split = Split(text=text, host=split.host, timestamp=split.timestamp, clock=split.clock)
    return split
