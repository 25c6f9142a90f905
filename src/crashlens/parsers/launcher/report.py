"""The failure report torchelastic prints when workers fail, read as a small state machine.

    Root Cause (first observed failure):
    [0]:
      time      : 2025-03-14_10:02:07
      host      : node-02
      rank      : 3 (local_rank: 3)
      exitcode  : -9 (pid: 2606)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 2606

Sections (`Root Cause`, `Failures`, `Other Failures`) hold records (`[N]:`) made of fields;
borders close a record, `=`/`*` borders the whole report. Only the anchor lines are seen, so
a field further than `REPORT_SPAN` lines from its record is not one of its fields. Each
closed record gives a `launcher.exit_code` (source torchelastic-root-cause |
torchelastic-failure) and maybe a `launcher.signal`; the root cause record gives
`launcher.first_failure`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from crashlens.model import Fact, Line
from crashlens.parsers.base import Anchor, fact
from crashlens.parsers.launcher.signals import SIGNAL_RECEIVED, SignalLog
from crashlens.text.values import bounded_int

REPORT_SPAN = 400
"""Lines a torchelastic report may span; a record field further away is not one of its fields."""
MAX_REPORT_RECORDS = 64

# The report's anchors: no handler, `ReportReader.read` takes them together.
HEADER: Anchor[Any] = Anchor(
    r"^(?:Root Cause(?: \(first observed failure\))?|(?:Other )?Failures):[ \t]*$"
)
INDEX: Anchor[Any] = Anchor(r"^\[[0-9]+\]:[ \t]*$")
FIELD: Anchor[Any] = Anchor(r"^[ \t]+(?:time|host|rank|exitcode|error_file|traceback|msg)[ \t]*:")
BORDER: Anchor[Any] = Anchor(r"^[ \t]*(?:={20,}|-{20,}|\*{20,})[ \t]*$")

_HEADER = re.compile(r"^(Root Cause(?: \(first observed failure\))?|(?:Other )?Failures):[ \t]*$")
_INDEX = re.compile(r"^\[([0-9]+)\]:[ \t]*$")
_FIELD = re.compile(r"^[ \t]+(time|host|rank|exitcode|error_file|traceback|msg)[ \t]*:[ \t]?(.*)$")
_BORDER = re.compile(r"^[ \t]*([=*-])\1{19,}[ \t]*$")
_RANK_FIELD = re.compile(r"^(-?[0-9]+)(?: \(local_rank: ([0-9]+)\))?")
_EXIT_FIELD = re.compile(r"^(-?[0-9]+)(?: \(pid: ([0-9]+)\))?")


@dataclass
class Record:
    """One `[N]:` entry of a torchelastic report."""

    root: bool
    lineno: int
    last: int
    fields: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    """field name -> (value, lineno, line text)."""

    @property
    def rank(self) -> int | None:
        m = _RANK_FIELD.match(self.value("rank"))
        return bounded_int(m.group(1)) if m else None

    def value(self, name: str) -> str:
        entry = self.fields.get(name)
        return entry[0].strip() if entry else ""


class ReportReader:
    """The report state of one log: the section and record being read, and what they gave.

    Exit codes go to the collector's fact list (in report order), signals to its signal log.
    """

    def __init__(self, path: str, facts: list[Fact], signals: SignalLog) -> None:
        self.path = path
        self.facts = facts
        self.signals = signals
        self.section: tuple[bool, int] | None = None
        """(root?, lineno) of the report section being read."""
        self.record: Record | None = None
        self.records = 0
        self.first_failure: Fact | None = None

    def read(self, line: Line, matched: tuple[Anchor[Any], ...]) -> None:
        """Track sections and records; fields only count inside a record. Every fed line is
        read: one far from the open record ends it."""
        text = line.text
        if HEADER in matched and (m := _HEADER.match(text)):
            self.close()
            self.section = (m.group(1).startswith("Root Cause"), line.lineno)
            return
        if INDEX in matched and (m := _INDEX.match(text)):
            self.close()
            if self.section and line.lineno - self.section[1] <= REPORT_SPAN:
                self.record = Record(root=self.section[0], lineno=line.lineno, last=line.lineno)
            return
        if BORDER in matched and _BORDER.match(text):
            self.close()
            if text.strip()[:1] in "=*":
                self.section = None
            return
        record = self.record
        if record is None:
            return
        if line.lineno - record.last > REPORT_SPAN:
            self.close()
            return
        if FIELD in matched and (m := _FIELD.match(text)):
            record.fields.setdefault(m.group(1), (m.group(2), line.lineno, line.raw))
            record.last = line.lineno

    def continued_by(self, line: Line) -> Record | None:
        """The record whose traceback this (indented) line continues, if any."""
        record = self.record
        if record is None or "traceback" not in record.fields:
            return None
        if line.lineno - record.last > REPORT_SPAN or not line.text[:1].isspace():
            return None
        return record

    def close(self) -> None:
        """Turn the open record, if any, into facts."""
        record, self.record = self.record, None
        if record is None or self.records >= MAX_REPORT_RECORDS:
            return
        self.records += 1
        exit_entry = record.fields.get("exitcode")
        rank_m = _RANK_FIELD.match(record.value("rank"))
        exit_m = _EXIT_FIELD.match(record.value("exitcode"))
        rank = bounded_int(rank_m.group(1)) if rank_m else None
        local_rank = bounded_int(rank_m.group(2)) if rank_m and rank_m.group(2) else None
        code = bounded_int(exit_m.group(1)) if exit_m else None
        pid = bounded_int(exit_m.group(2)) if exit_m and exit_m.group(2) else None
        host = record.value("host") or None
        error_file = record.value("error_file") or None
        source = "torchelastic-root-cause" if record.root else "torchelastic-failure"
        if code is not None and exit_entry is not None:
            self.facts.append(
                fact(
                    "launcher.exit_code",
                    code,
                    self.path,
                    exit_entry[1],
                    text=exit_entry[2],
                    rank=rank,
                    local_rank=local_rank,
                    host=host,
                    pid=pid,
                    source=source,
                )
            )
        if record.root and rank is not None:
            entry = record.fields["rank"]
            self.first_failure = fact(
                "launcher.first_failure",
                rank,
                self.path,
                entry[1],
                text=entry[2],
                host=host,
                exit_code=code,
                pid=pid,
                local_rank=local_rank,
                time=record.value("time") or None,
                error_file=None if error_file == "<N/A>" else error_file,
            )
        self._signal(record, rank, pid, code)

    def _signal(self, record: Record, rank: int | None, pid: int | None, code: int | None) -> None:
        for name in ("traceback", "msg"):
            entry = record.fields.get(name)
            if entry and (m := SIGNAL_RECEIVED.search(entry[0])):
                self.signals.add(
                    m.group(2),
                    entry[1],
                    entry[2],
                    rank=rank,
                    pid=bounded_int(m.group(3)),
                    source="torchelastic",
                )
                return
        if code is not None and code < 0 and "exitcode" in record.fields:
            entry = record.fields["exitcode"]
            self.signals.add_exit_code(code, entry[1], entry[2], rank=rank, pid=pid)
