"""Which files a Python traceback ran through, kept while a log streams (fact `python.stack`).

An exception line alone says what went wrong, not where: `OSError: [Errno 28] No space left on
device` is a full disk when a checkpoint is saved and a full `/dev/shm` when a multiprocessing
semaphore, a `SharedMemory` block or pandarallel's memory file system is written, and only the
frames above it tell which. `StackTracker` follows the frame lines of each traceback (CPython's
`File "path", line N, in func` and faulthandler's `File "path", line N in func`), per rank
since ranks interleave, and hands them to the exception line that closes the traceback.

Fact (one per distinct rank, exception and innermost file; at most `MAX_STACKS`):

* `python.stack`: str the innermost frame's file; attrs `frames` (the traceback's files,
  outermost first, `|`-joined, the innermost `KEPT_FRAMES`), `exception` (the exception's
  type), `errno` (the errno name the message holds, `ENOSPC`, from `patterns/tables/errno.toml`),
  rank, host. Its line is the exception line.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from functools import cache

from crashlens.parsers.tables import load_catalogs

ANCHOR = r'File "[^"\n]+", line [0-9]+|Traceback \(most recent call last\)'
"""The scan pattern of the lines the tracker reads (line-safe)."""
KEPT_FRAMES = 16
"""Innermost frames kept per traceback: the writer that failed sits at the inner end."""
MAX_RANKS = 64
"""Ranks whose open traceback is followed at once; more are not followed."""
MAX_STACKS = 200
"""`python.stack` facts kept per log."""
CLOSE_GAP = 6
"""Lines an exception line may sit below its traceback's last frame (the frame's source line,
3.11's `^^^` markers, a wrapped call): further down, the frames belong to no exception."""

MAX_ERRNO_DIGITS = 9
"""Digits an errno number may have; a longer `[Errno N]` names none."""

_FRAME = re.compile(r'File "([^"\n]+)", line [0-9]+')
_HEADER = re.compile(r"Traceback \(most recent call last\)")
_ERRNO_NUMBER = re.compile(r"\[Errno ([0-9]+)\]")
# An exception line behind a prefix the launcher's prefixes do not strip (a compose service's
# `name  | `, a logger's `time ERROR:`): only read right below a traceback's frames.
_PREFIXED_EXCEPTION = re.compile(
    r"(?:^|[ \t:|\]])([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception))(?:: ([^\n]*))?[ \t]*$"
)


@dataclass(slots=True)
class _Open:
    frames: deque[str]
    last: int


@cache
def _errno_names() -> tuple[dict[int, str], tuple[tuple[str, str], ...]]:
    """errno number -> name, and (bare message, name) pairs, from the errno catalog."""
    by_code: dict[int, str] = {}
    texts: list[tuple[str, str]] = []
    for catalog in load_catalogs():
        if catalog.name != "errno":
            continue
        for entry in catalog.entries:
            if entry.code is not None:
                by_code[entry.code] = entry.id
            if entry.texts:
                texts.append((entry.texts[0], entry.id))
    return by_code, tuple(texts)


def errno_name(message: str) -> str | None:
    """The errno an exception message holds (`[Errno 28]`, or glibc's message), by name."""
    by_code, texts = _errno_names()
    if (m := _ERRNO_NUMBER.search(message)) is not None:
        digits = m.group(1)
        # int() refuses a string of over 4300 digits; no errno has more than a few
        return by_code.get(int(digits)) if len(digits) <= MAX_ERRNO_DIGITS else None
    for text, name in texts:
        if text in message:
            return name
    return None


def prefixed_exception(text: str) -> tuple[str, str] | None:
    """(type, "Type: message") of an exception line behind an unknown prefix, else None."""
    m = _PREFIXED_EXCEPTION.search(text)
    if m is None:
        return None
    message = (m.group(2) or "").strip()
    return m.group(1), f"{m.group(1)}: {message}" if message else m.group(1)


class StackTracker:
    """The frames of the traceback each rank is printing (see the module docstring)."""

    def __init__(self) -> None:
        self.open: dict[int | None, _Open] = {}

    def read(self, text: str, rank: int | None, lineno: int) -> None:
        """Read one anchor line: a traceback header or a frame."""
        if _HEADER.search(text):
            self.open.pop(rank, None)
            return
        m = _FRAME.search(text)
        if m is None:
            return
        current = self.open.get(rank)
        if current is None or lineno - current.last > CLOSE_GAP:
            if current is None and len(self.open) >= MAX_RANKS:
                return
            current = self.open[rank] = _Open(deque(maxlen=KEPT_FRAMES), lineno)
        current.frames.append(m.group(1))
        current.last = lineno

    def close(self, rank: int | None, lineno: int) -> tuple[str, ...]:
        """The frames of the traceback an exception line at `lineno` closes (none: ())."""
        current = self.open.pop(rank, None)
        if current is None or not 0 < lineno - current.last <= CLOSE_GAP:
            return ()
        return tuple(current.frames)
