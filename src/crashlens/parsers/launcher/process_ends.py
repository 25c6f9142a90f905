"""How each process's own output ends, in a log where every line says which process wrote it.

A log that interleaves the output of many processes (NCCL's `host:pid:tid [dev]` prefix,
pdsh's `host: `, torchrun's `[rankN]:`) has one last line, but each process has its own. When
one process's own last lines are an error (NCCL's return-code trace, an exception, an error
message, a fatal one), the lines other processes print after it are their business: they do
not show that the process which raised the error went on. `decide.unended` reads these facts
so that such a log is not judged to have gone on past that process's alarm.

Fact key: `log.process_end`: str the kind of error the process's own output ends with
(`unwinding`, `exception`, `error`, `fatal`), at the process's last line; attrs `process`
(its prefix: host, pid, rank), `first` (where its closing run of error lines begins), `lines`
(all its own line numbers in the tail, comma-separated: an alarm on one of them is its).
Only read from the log's tail, and only when every non-blank line of it carries a process
prefix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashlens.model import Fact, Line
from crashlens.parsers.base import fact
from crashlens.parsers.launcher.ending import (
    ERROR_LINE,
    ERROR_NAMED,
    TRACEBACK_FRAME,
    TRACEBACK_HEADER,
    fatal_kind,
)
from crashlens.parsers.launcher.messages import parse_exception

UNWINDING = re.compile(r"NCCL INFO [^\n]*\.(?:cc|cu|h|hpp):[0-9]+ -> [1-9][0-9]*\b")
"""NCCL's return-code trace: each function an error passes through logs `file.cc:LINE ->
CODE` as it returns it (a code of 0 is success)."""
NCCL_WARN = re.compile(r"\bNCCL WARN\b")
NCCL_PID = re.compile(r"^[ \t]*[^ \t:\[\]]+:([0-9]+):[0-9]+ \[[0-9]+\] ")
"""NCCL's `host:pid:tid [dev]` prefix: the pid tells apart the processes of one host."""
SOURCE_LINE = re.compile(r"^[ \t]{2,}[^ \t]")
"""A traceback's quoted source line (indented under its frame) or a caret line."""
MAX_PROCESSES = 256
"""Processes followed in the tail, at most (a tail holds 40 lines)."""


def process_ends(path: str, tail: Sequence[Line]) -> list[Fact]:
    """`log.process_end` for each process whose own last lines in `tail` are an error."""
    shown = [line for line in tail if line.text.strip()]
    if len(shown) < 2 or any(line.host is None and line.rank is None for line in shown):
        return []
    by_process: dict[str, list[Line]] = {}
    for line in shown:
        key = process_of(line)
        if key not in by_process and len(by_process) >= MAX_PROCESSES:
            return []
        by_process.setdefault(key, []).append(line)
    if len(by_process) < 2:
        return []  # one process: the log's own ending says it (`ending.py`)
    found = []
    for key, lines in by_process.items():
        ending = _closing_run(lines)
        if ending is None:
            continue
        kind, run = ending
        last = run[-1]
        found.append(
            fact(
                "log.process_end",
                kind,
                path,
                last.lineno,
                text=last.raw,
                process=key,
                first=run[0].lineno,
                lines=",".join(str(line.lineno) for line in lines),
            )
        )
    return found


def process_of(line: Line) -> str:
    """The process a prefixed line names: host, NCCL pid and rank, as far as they are shown."""
    pid = NCCL_PID.match(line.raw)
    parts = [
        line.host or "",
        pid.group(1) if pid else "",
        str(line.rank) if line.rank is not None else "",
    ]
    return ":".join(parts)


def _closing_run(lines: Sequence[Line]) -> tuple[str, list[Line]] | None:
    """(kind, the lines of the run) when a process's own output ends with a run of error
    lines whose last one shows an error; None when it ends with ordinary output."""
    kind = _error_kind(lines[-1].text)
    if kind is None:
        return None
    start = len(lines) - 1
    while start > 0 and _part_of_error(lines[start - 1].text):
        start -= 1
    return kind, list(lines[start:])


def _error_kind(text: str) -> str | None:
    """What kind of error a process's last line shows, or None for ordinary output."""
    if UNWINDING.search(text):
        return "unwinding"
    if fatal_kind(text) is not None:
        return "fatal"
    if parse_exception(text) is not None or ERROR_NAMED.search(text.strip()):
        return "exception"
    if ERROR_LINE.search(text) or NCCL_WARN.search(text):
        return "error"
    return None


def _part_of_error(text: str) -> bool:
    """Whether a line belongs to a run of error output (a warning NCCL raised, a trace, a
    traceback's header, frames and source lines)."""
    return (
        _error_kind(text) is not None
        or bool(TRACEBACK_HEADER.search(text) or TRACEBACK_FRAME.search(text))
        or bool(SOURCE_LINE.search(text))
    )
