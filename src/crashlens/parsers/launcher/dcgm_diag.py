"""DCGM's diagnostic report as `dcgmi diag -r N` prints it: a two-column table in any log.

```
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPU: 1                                  |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 had uncorrectable memory errors and row  |
|                           |  remapping failed. Drain the GPU and reset it  |
```

Each test's row gives its result (`Pass - All`, `Fail - GPU: 0`, DCGM 4's `GPU0: Fail` on a
continuation row), and the `Warning` and `Info` rows under it give DCGM's messages, wrapped
at the column's width: a message longer than a row (most of them) is cut into pieces, mid-word
where a piece fills the row. A line rule never sees such a message whole, so this reader joins
the pieces and looks the message up in DCGM's own catalog (`tables/dcgm_errors.toml`), as the
rules would read it in DCGM's log or JSON output. Rows are read only after the table's
`| Diagnostic | Result |` header, and only while they follow each other.

Facts (each with the line of the row that starts it):

* `dcgm.diag_message`: str `<category>/<role>` of the catalog entry the joined message holds
  (`hardware/root`, `driver/symptom`, `ambiguous/symptom`, `noise/context`, ...), `unlisted`
  for a message the catalog does not hold; attrs `id` (the entry, empty if none), `test`
  (the test row above it), `section` (`Deployment`, `Integration`, `Hardware`, `Stress`,
  ...), `kind` (`Warning` or `Info`), `message` (the joined text).
* `dcgm.test_failed`: str the name of a test whose result is `Fail`; attrs `section`, `gpus`
  (`All`, `0`, `0, 3`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crashlens.library import tables_dir
from crashlens.model import Fact, Line
from crashlens.parsers.base import fact
from crashlens.parsers.tables import load_catalog

HEADER = re.compile(r"^[ \t]*\|[ \t]*Diagnostic[ \t]+\|[ \t]*Result[ \t]*\|[ \t]*$")
ROW = re.compile(r"^[ \t]*\|([^|\n]*)\|([^|\n]*)\|[ \t]*$")
SECTION = re.compile(r"^[ \t]*[|+]-{3,}[ \t]+([A-Za-z][A-Za-z ]{0,40}?)[ \t]+-*\+-*[|+][ \t]*$")
RESULT = re.compile(
    r"^(?:GPU[ \t]?([0-9]{1,3}):[ \t]*)?(Pass|Fail|Warn|Skip)\b"
    r"(?:[ \t]*-[ \t]*(All|GPU:?[ \t]*[0-9][0-9, ]*))?",
    re.IGNORECASE,
)
MESSAGE_ROWS = frozenset({"warning", "info"})
TEST_SECTIONS = {
    "pcie": "Integration",
    "gpu memory": "Hardware",
    "memtest": "Hardware",
    "diagnostic": "Hardware",
    "pulse test": "Hardware",
    "sm stress": "Stress",
    "targeted stress": "Stress",
    "targeted power": "Stress",
    "memory bandwidth": "Stress",
    "eud": "Stress",
    "nvbandwidth": "Stress",
}
"""The tests of DCGM's integration, hardware and stress parts, by name, with their section: a
report pasted without the table's header and section rules (only the failing test's rows,
as users quote them) still names a test, and its result cell says the rest."""
UNLISTED = "unlisted"
"""The value of a message the catalog does not hold (kept: its words may still decide)."""
MAX_GAP = 2
"""Lines a table row may follow the previous one by: the `+====+` rule under the header and
the section rules between rows are not rows."""
MAX_MESSAGE = 1200
"""Characters a joined message may grow to (DCGM's longest are a few hundred)."""
MAX_FACTS = 64


@dataclass(frozen=True, slots=True)
class Entry:
    """One message of DCGM's catalog, as the reader needs it."""

    id: str
    category: str
    role: str
    texts: tuple[str, ...]


@cache
def catalog() -> tuple[Entry, ...]:
    """DCGM's diagnostic messages (`tables/dcgm_errors.toml`), longest text first."""
    table = load_catalog(tables_dir() / "dcgm_errors.toml")
    entries = [
        Entry(entry.id, entry.category, entry.role.value, tuple(entry.texts))
        for entry in table.entries
    ]
    return tuple(sorted(entries, key=lambda e: -max(map(len, e.texts))))


def entry_of(message: str) -> Entry | None:
    """The catalog entry whose text the message holds, the most specific first."""
    return next((e for e in catalog() if any(text in message for text in e.texts)), None)


@dataclass(slots=True)
class _Message:
    """The message being joined (the reader's own state, grown piece by piece)."""

    kind: str
    test: str
    section: str
    lineno: int
    raw: str
    text: str
    full: bool
    """Whether the last piece filled its row: the next piece then continues its word."""


class DcgmDiagReader:
    """The state of one log's DCGM diagnostic tables, fed their rows in order."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.active = False
        self.last = 0
        self.section = ""
        self.test = ""
        self.message: _Message | None = None
        self.facts: list[Fact] = []
        self.seen: set[tuple[str, str, str]] = set()

    def header(self, line: Line) -> None:
        if HEADER.match(line.text):
            self._close()
            self.active, self.last, self.section, self.test = True, line.lineno, "", ""

    def section_rule(self, line: Line) -> None:
        if not self._follows(line):
            return
        m = SECTION.match(line.text)
        if m is not None:
            self._close()
            self.section, self.test = m.group(1).strip(), ""
            self.last = line.lineno

    def row(self, line: Line) -> None:
        if not self.active:
            self._start_headless(line)
        if not self._follows(line):
            return
        m = ROW.match(line.text)
        if m is None:
            return
        self.last = line.lineno
        name, cell = m.group(1).strip(), m.group(2)
        content = cell.strip()
        # DCGM cuts a message into pieces of the cell's width (less its two margins and one
        # free column) wherever that falls: a piece keeps the space it starts with, and one
        # that fills its row was cut mid-word (a shorter one ended at a space it dropped)
        piece = cell.removeprefix(" ").rstrip()
        full = len(piece) >= len(cell) - 3
        if not name:
            if self.message is not None:
                self._continue(piece, full)
            else:
                self._result(content, line)
            return
        self._close()
        if name.lower() in MESSAGE_ROWS:
            self.message = _Message(
                name.capitalize(), self.test, self.section, line.lineno, line.raw, content, full
            )
        else:
            self.test = name
            self._result(content, line)

    def _start_headless(self, line: Line) -> None:
        """Start reading at a test's row with its result (`| GPU Memory | Fail - GPU: 0 |`)
        where no header came before: the row's test names its section."""
        m = ROW.match(line.text)
        if m is None or RESULT.match(m.group(2).strip()) is None:
            return
        section = TEST_SECTIONS.get(m.group(1).strip().lower())
        if section is not None:
            self.active, self.last, self.section, self.test = True, line.lineno, section, ""

    def end(self) -> list[Fact]:
        """The facts read, the message still open closed."""
        self._close()
        return self.facts

    def _follows(self, line: Line) -> bool:
        """Whether the line belongs to the table being read (else the table has ended)."""
        if not self.active:
            return False
        if line.lineno - self.last > MAX_GAP:
            self._close()
            self.active = False
            return False
        return True

    def _continue(self, piece: str, full: bool) -> None:
        message = self.message
        if message is None or len(message.text) >= MAX_MESSAGE:
            return
        joined = message.text + piece if message.full else f"{message.text} {piece.lstrip()}"
        message.text = joined[:MAX_MESSAGE]
        message.full = full

    def _result(self, content: str, line: Line) -> None:
        m = RESULT.match(content)
        if m is None or m.group(2).lower() != "fail" or not self.test:
            return
        gpus = m.group(1) or (m.group(3) or "").removeprefix("GPU").strip(" :") or "All"
        self._add(
            "dcgm.test_failed",
            self.test,
            line.lineno,
            line.raw,
            section=self.section,
            gpus=gpus,
        )

    def _close(self) -> None:
        message, self.message = self.message, None
        if message is None:
            return
        entry = entry_of(message.text)
        self._add(
            "dcgm.diag_message",
            UNLISTED if entry is None else f"{entry.category}/{entry.role}",
            message.lineno,
            message.raw,
            id="" if entry is None else entry.id,
            test=message.test,
            section=message.section,
            kind=message.kind,
            message=message.text[:300],
        )

    def _add(self, key: str, value: str, lineno: int, raw: str, **attrs: str) -> None:
        identity = (key, value, "|".join(attrs.values()))
        if identity in self.seen or len(self.facts) >= MAX_FACTS:
            return
        self.seen.add(identity)
        self.facts.append(fact(key, value, self.path, lineno, text=raw, **attrs))
