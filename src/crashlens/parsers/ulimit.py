"""`ulimit -a` output from bash (4.x and 5.x), dash (`/bin/sh` on Debian/Ubuntu) and zsh, and
the kernel's `/proc/<pid>/limits` (the limits a running process really has).

bash prints `max locked memory       (kbytes, -l) 64`; bash 5.2 adds a first row
`real-time non-blocking time  (microseconds, -R)` and widens the label column. dash prints
`locked memory(kb)    64` with no option letters; zsh prints `-l: locked-in-memory size (kbytes)
64`. Rows are recognised by their option letter where there is one, by their label otherwise.
`ulimit -Sa` and `-Ha` print the same layout, so soft and hard limits cannot be told apart.
`/proc/<pid>/limits` prints `Max locked memory  65536  65536  bytes` under a `Limit  Soft Limit
Hard Limit  Units` header: the soft limit is the fact (in the units `ulimit -a` uses), the hard
one its `hard` attr. A file of single queries as a terminal shows them (`$ ulimit -l`, then
`8192` on the next line) gives the same facts, the fact's text being `command -> value`.

Facts (`unlimited` = -1; every fact has its line number and the row as text):

* `ulimit.memlock_kb`: int max locked memory (`-l`), KiB.
* `ulimit.nofile`: int open files (`-n`).
* `ulimit.stack_kb`: int stack size (`-s`), KiB.
* `ulimit.nproc`: int max user processes (`-u`).
* `ulimit.core_blocks`: int core file size (`-c`); `ulimit.vmem_kb`: int virtual memory (`-v`);
  `ulimit.rss_kb`: int max memory size (`-m`); `ulimit.data_kb`: int data segment (`-d`);
  `ulimit.sigpending`: int pending signals (`-i`); `ulimit.msgqueue_bytes`: int (`-q`).
"""

from __future__ import annotations

import re

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact
from crashlens.text.values import bounded_int

# bash: `label   (unit, -x) value` or `label   (-x) value`
# Possessive repeats, and `(?<![ \t])` where a lazy label meets the spaces before the value,
# keep these linear: the plain forms backtracked cubically (a 3.8 KB line took 37 s).
_BASH_RE = re.compile(
    r"^[ \t]*+([a-zA-Z][^()]*+)\((?:[^()]*,[ \t]*)?-([a-zA-Z])\)[ \t]++(\S++)[ \t]*+$"
)
# zsh: `-x: label (unit)   value`
_ZSH_RE = re.compile(r"^[ \t]*+-([a-zA-Z]):[ \t]++(.+?)(?<![ \t])[ \t]++(\S++)[ \t]*+$")
# dash: `locked memory(kb)    64` (the label ends in a space only before a unit)
_DASH_RE = re.compile(r"^[ \t]*+([a-z][a-z ]*?)(?:\(([a-z]+)\)|(?<! ))[ \t]++(\S++)[ \t]*+$")
_VALUE_RE = re.compile(r"^(?:-?\d+|unlimited|infinity)$")

_BY_FLAG = {
    "l": "ulimit.memlock_kb",
    "n": "ulimit.nofile",
    "s": "ulimit.stack_kb",
    "u": "ulimit.nproc",
    "c": "ulimit.core_blocks",
    "v": "ulimit.vmem_kb",
    "m": "ulimit.rss_kb",
    "d": "ulimit.data_kb",
    "i": "ulimit.sigpending",
    "q": "ulimit.msgqueue_bytes",
}
_DASH_LABELS = {
    "locked memory": "l",
    "nofiles": "n",
    "stack": "s",
    "process": "u",
    "coredump": "c",
    "vmemory": "v",
    "memory": "m",
    "data": "d",
    "sigpending": "i",
    "msgqueue": "q",
}
_DASH_ONLY = frozenset({"time", "file", "coredump", "nofiles", "vmemory", "locks", "rtprio"})
"""dash labels no other shell prints bare: they make a dash table recognisable."""
_BASH_FIRST_RE = re.compile(
    r"\A[ \t\r\n]*(?:core file size|real-time non-blocking time)[ \t]+\((?:[a-z]+, )?-[cR]\)"
)


_PROC_HEADER_RE = re.compile(r"^Limit[ \t]+Soft Limit[ \t]+Hard Limit[ \t]+Units", re.MULTILINE)
_PROC_ROW_RE = re.compile(
    r"^Max ([a-z ]+?)(?<! )[ \t]{2,}+(\S++)[ \t]++(\S++)(?:[ \t]++([a-z]++))?[ \t]*+$"
)
_PROC_ROWS = {
    "locked memory": ("l", 1024),
    "open files": ("n", 1),
    "stack size": ("s", 1024),
    "processes": ("u", 1),
    "address space": ("v", 1024),
    "resident set": ("m", 1024),
    "data size": ("d", 1024),
    "pending signals": ("i", 1),
    "msgqueue size": ("q", 1),
}
"""`/proc/<pid>/limits` rows: the `ulimit` option letter, and what to divide bytes by to get
the unit `ulimit -a` prints (KiB)."""


def _scaled(value: int | None, divisor: int) -> int | None:
    """Bytes to the unit `ulimit -a` prints; unlimited (-1) stays -1."""
    return value if value is None or value < 0 else value // divisor


def _proc_facts(text: str, path: str) -> list[Fact]:
    """The facts of a `/proc/<pid>/limits` table."""
    facts: list[Fact] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = clean_line(raw).strip()
        row = _PROC_ROW_RE.match(line)
        known = _PROC_ROWS.get(row.group(1)) if row else None
        if row is None or known is None:
            continue
        flag, divisor = known
        soft = _scaled(_value(row.group(2)), divisor)
        if soft is not None:
            hard = _scaled(_value(row.group(3)), divisor)
            facts.append(fact(_BY_FLAG[flag], soft, path, lineno, text=line, hard=hard))
    return facts


def _value(token: str) -> int | None:
    if not _VALUE_RE.match(token):
        return None
    return -1 if token in ("unlimited", "infinity") else bounded_int(token)


def _row(line: str) -> tuple[str, str] | None:
    """(option letter, value token) of one `ulimit -a` row, in any of the three layouts."""
    bash = _BASH_RE.match(line)
    if bash:
        return bash.group(2), bash.group(3)
    zsh = _ZSH_RE.match(line)
    if zsh:
        return zsh.group(1), zsh.group(3)
    dash = _DASH_RE.match(line)
    if dash and dash.group(1).strip() in _DASH_LABELS.keys() | _DASH_ONLY:
        flag = _DASH_LABELS.get(dash.group(1).strip(), "?")
        return flag, dash.group(3)
    return None


_SNIFF_MARKERS = (
    "file size",
    "locked",
    "open files",
    "stack size",
    "cpu time",
    "Soft Limit",
    "ulimit -",
)
"""Every `ulimit -a` layout (bash, dash, zsh) prints at least one of these labels; a file of
single queries holds the command."""
_QUERY_RE = re.compile(r"^(?:[^\n]{0,200}?[$#%>][ \t]*)?ulimit[ \t]+-[HS]?([a-zA-Z])[ \t]*$")
"""One limit asked for alone (`ulimit -l`, `ulimit -Hn`), as a terminal or a note shows the
command, a shell prompt before it or not: the shell prints the bare value on the next line."""


def _queries(lines: list[str]) -> list[tuple[int, str, str, str]]:
    """(index of the value's line, option letter, value token, `command -> value` text) of
    each `ulimit -<x>` command line whose next line is a bare value."""
    found: list[tuple[int, str, str, str]] = []
    for index, line in enumerate(lines[:-1]):
        query = _QUERY_RE.match(line.strip())
        value = lines[index + 1].strip()
        if query is not None and _VALUE_RE.match(value):
            found.append((index + 1, query.group(1), value, f"{line.strip()} -> {value}"))
    return found


class UlimitParser(DocumentParser):
    """`ulimit -a` in bash, dash or zsh, and single queries (`ulimit -l` then its value)."""

    kind = InputKind.ULIMIT
    name = "ulimit -a"
    filenames = ("ulimit*", "limits", "*limits*.txt")

    @staticmethod
    def sniff(head: str) -> float:
        if not any(marker in head for marker in _SNIFF_MARKERS):
            return 0.0  # substring gate: every sniffer runs on every file of a scan
        if _BASH_FIRST_RE.search(head) or _PROC_HEADER_RE.search(head[:4096]):
            return 1.0
        lines = [clean_line(line) for line in head.splitlines()[:100] if line.strip()]
        rows = [row for row in map(_row, lines) if row and _value(row[1]) is not None]
        if len(rows) < 3:
            # a file of single queries and their values, nothing else
            queries = _queries(lines)
            return 0.9 if queries and 2 * len(queries) == len(lines) else 0.0
        ratio = len(rows) / len(lines)
        return 0.9 * ratio if ratio >= 0.5 else 0.2

    def parse(self, text: str, path: str) -> DocumentResult:
        if _PROC_HEADER_RE.search(text):
            found = _proc_facts(text, path)
            return DocumentResult(tuple(found), () if found else ("no limits rows found",))
        lines = [clean_line(raw) for raw in text.split("\n")]
        # (line number, option letter, value token, the fact's text): table rows, then single
        # queries; the first of a limit wins (a file may hold several tables)
        rows = [
            (lineno, row[0], row[1], line.strip())
            for lineno, line in enumerate(lines, start=1)
            if (row := _row(line)) is not None
        ]
        rows += [(index + 1, flag, token, shown) for index, flag, token, shown in _queries(lines)]
        facts: list[Fact] = []
        seen: set[str] = set()
        for lineno, flag, token, shown in rows:
            key = _BY_FLAG.get(flag)
            value = _value(token)
            if key is None or value is None or key in seen:
                continue
            seen.add(key)
            facts.append(fact(key, value, path, lineno, text=shown))
        warnings = () if facts else ("no ulimit -a rows found",)
        return DocumentResult(tuple(facts), warnings)
