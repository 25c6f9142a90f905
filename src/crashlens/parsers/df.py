"""`df` output: GNU df, -h, -H, -T, -P, -i, and BSD/macOS layouts.

Columns are not at fixed positions: a long source (`/dev/mapper/...`, a Lustre
`addr@o2ib:/fs`) pushes the rest to the right, and mount points may contain spaces. So each row
is split into whitespace tokens and the header's numeric columns are matched against them: the
filesystem is whatever comes before the first run of tokens that fits the columns, the mount
point whatever comes after. POSIX df wraps a long filesystem name onto its own line; the next
line is joined to it. A file may hold several df outputs (each header switches the layout).

Facts (every one has its line number and the row as text):

* `df.use_percent`: float `Use%`/`Capacity`; attrs `mount`, `filesystem`, `size_bytes`,
  `used_bytes`, `avail_bytes`, `fstype` (with -T). Rows whose percentage is `-` (proc, sysfs)
  give no fact.
* `df.inode_use_percent`: float `IUse%` (`df -i`, or the `%iused` column of BSD df); attrs
  `mount`, `filesystem`, `inodes`, `ifree`.
* `df.shm_size_bytes`: int size of the filesystem mounted on /dev/shm; attrs `mount`,
  `use_percent`, `filesystem`, `avail_bytes`.

Human sizes (`1.8T`, `614G`, `4.7M`, `0`) are powers of 1024, as `df -h` prints them; `df -H`
prints the same letters in powers of 1000 and the header does not say which, so a lower-case
`k` (which only `-H` prints) switches the whole table to powers of 1000.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crashlens.model import Fact, FactValue, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact
from crashlens.text.sizes import human_size, is_human_size, unit_bytes
from crashlens.text.values import bounded_int, finite_float

# Possessive space runs: with `[ \t]+(.*?)[ \t]*` three repeats shared every space of a long
# blank header and backtracked cubically. The columns are split on spaces, so the group may
# keep the spaces before `Mounted`.
_HEADER_RE = re.compile(r"^[ \t]*+Filesystem[ \t]++(.*?)Mounted[ \t]++on[ \t]*+$")
_HEADER_SNIFF_RE = re.compile(r"^[ \t]*+Filesystem[ \t]++[^\n]*Mounted[ \t]++on[ \t]*+\r?$", re.M)
_BLOCKS_RE = re.compile(r"^(\d+)([KMGT]?)-blocks$", re.IGNORECASE)
_PERCENT_RE = re.compile(r"^(?:(\d+(?:\.\d+)?)%|-)$")
_SI_HINT_RE = re.compile(r"(?:^|[ \t])\d+(?:\.\d+)?k(?=[ \t])", re.MULTILINE)
_TOKEN_RE = re.compile(r"\S+")
_DEV_SHM = "/dev/shm"
_MAX_COLUMNS = 16
"""More columns than any df prints: such a "header" is not one (and rows would cost n^2)."""

# Header names -> column role. Unknown names are kept as "other" and only checked loosely.
_ROLES = {
    "size": "size",
    "used": "used",
    "avail": "avail",
    "available": "avail",
    "use%": "pct",
    "capacity": "pct",
    "type": "type",
    "inodes": "inodes",
    "iused": "iused",
    "ifree": "ifree",
    "iuse%": "ipct",
    "%iused": "ipct",
}


@dataclass(frozen=True, slots=True)
class _Layout:
    """What one df header says about the rows under it."""

    roles: tuple[str, ...]
    """The role of each column between `Filesystem` and `Mounted on`."""
    block_bytes: int | None
    """Bytes per unit of the size columns; None for human-readable sizes (`-h`)."""


def _layout(header_columns: str) -> _Layout:
    """Read a df header's columns (between `Filesystem` and `Mounted on`)."""
    roles: list[str] = []
    block_bytes: int | None = None
    for name in header_columns.split():
        lowered = name.lower()
        blocks = _BLOCKS_RE.match(name)
        count = bounded_int(blocks.group(1)) if blocks else None
        if blocks and count is not None:
            roles.append("size")
            block_bytes = count * unit_bytes(blocks.group(2))
        else:
            roles.append(_ROLES.get(lowered, "other"))
    return _Layout(tuple(roles), block_bytes)


def _fits(role: str, token: str) -> bool:
    """Whether a token can be the value of a column with this role."""
    if role in ("pct", "ipct"):
        return _PERCENT_RE.match(token) is not None
    if role in ("type", "other"):
        return True
    return token == "-" or is_human_size(token)


@dataclass(frozen=True, slots=True)
class _Row:
    filesystem: str
    values: dict[str, str]
    mount: str


def _split_row(line: str, layout: _Layout) -> _Row | None:
    """Split a data row: filesystem, the header's columns, mount point (spaces allowed)."""
    width = len(layout.roles)
    if not 0 < width <= _MAX_COLUMNS:
        # no column between `Filesystem` and `Mounted on`: a header cut down to its ends
        # (every token would "fit" an empty set of columns), or more columns than df prints
        return None
    tokens = list(_TOKEN_RE.finditer(line))
    # Try the shortest filesystem first: a name with spaces is rarer than a mount with them.
    for fs_len in range(1, len(tokens) - width + 1):
        columns = tokens[fs_len : fs_len + width]
        if len(columns) < width:
            break
        if all(
            _fits(role, token.group()) for role, token in zip(layout.roles, columns, strict=True)
        ):
            mount = line[columns[-1].end() :].strip()
            if not mount:
                return None  # a row cut before its mount point: nothing to pin it on
            filesystem = line[: columns[0].start()].strip()
            values = {
                role: token.group() for role, token in zip(layout.roles, columns, strict=True)
            }
            return _Row(filesystem, values, mount)
    return None


def _percent(token: str | None) -> float | None:
    found = _PERCENT_RE.match(token or "")
    return finite_float(found.group(1)) if found else None


class _Table:
    """Turns the rows under one header into facts."""

    def __init__(self, layout: _Layout, path: str, si: bool) -> None:
        self.layout = layout
        self.path = path
        self.si = si

    def _size(self, row: _Row, role: str) -> int | None:
        token = row.values.get(role)
        return human_size(token, self.layout.block_bytes, self.si) if token else None

    def facts(self, row: _Row, lineno: int, text: str) -> list[Fact]:
        facts: list[Fact] = []

        def add(key: str, value: FactValue, **attrs: FactValue | None) -> None:
            facts.append(fact(key, value, self.path, lineno, text=text, **attrs))

        size = self._size(row, "size")
        avail = self._size(row, "avail")
        use = _percent(row.values.get("pct"))
        if use is not None:
            add(
                "df.use_percent",
                use,
                mount=row.mount,
                filesystem=row.filesystem,
                size_bytes=size,
                used_bytes=self._size(row, "used"),
                avail_bytes=avail,
                fstype=row.values.get("type"),
            )
        inode_use = _percent(row.values.get("ipct"))
        if inode_use is not None:
            add(
                "df.inode_use_percent",
                inode_use,
                mount=row.mount,
                filesystem=row.filesystem,
                inodes=_count(row.values.get("inodes")),
                ifree=_count(row.values.get("ifree")),
            )
        if row.mount.rstrip("/") == _DEV_SHM and size is not None:
            add(
                "df.shm_size_bytes",
                size,
                mount=row.mount,
                use_percent=use,
                filesystem=row.filesystem,
                avail_bytes=avail,
            )
        return facts


def _count(token: str | None) -> int | None:
    """An inode count (`df -i` prints plain numbers; `df -ih` prints `1.2M`)."""
    if token is None:
        return None
    return human_size(token, None) if not token.isdigit() else bounded_int(token)


class DfParser(DocumentParser):
    """`df` in its GNU and BSD layouts."""

    kind = InputKind.DF
    name = "df"
    filenames = ("df*.txt", "df*.out", "df*.log", "df")

    @staticmethod
    def sniff(head: str) -> float:
        header = _HEADER_SNIFF_RE.search(head)
        if header is None:
            return 0.0
        lines = [line for line in head.splitlines()[:200] if line.strip()]
        layout: _Layout | None = None
        fitting = 0
        for line in lines:
            found = _HEADER_RE.match(clean_line(line))
            if found:
                layout = _layout(found.group(1))
                fitting += 1
            elif layout is not None and _split_row(clean_line(line), layout):
                fitting += 1
        ratio = fitting / max(1, len(lines))
        # A df printout inside a bigger log is that log's kind, not df.
        return 0.3 if ratio < 0.5 else 0.5 + 0.5 * min(1.0, ratio / 0.9)

    def parse(self, text: str, path: str) -> DocumentResult:
        si = _SI_HINT_RE.search(text) is not None
        facts: list[Fact] = []
        warnings: list[str] = []
        table: _Table | None = None
        pending: tuple[int, str] | None = None
        skipped = 0
        for lineno, raw in enumerate(text.split("\n"), start=1):
            line = clean_line(raw)
            header = _HEADER_RE.match(line)
            if header:
                table, pending = _Table(_layout(header.group(1)), path, si), None
                continue
            if table is None or not line.strip():
                continue
            if pending is not None:  # POSIX df wraps a long filesystem name
                lineno, line = pending[0], f"{pending[1]} {line.strip()}"
                pending = None
            row = _split_row(line, table.layout)
            if row is None:
                if len(line.split()) == 1 and not line[0].isspace():
                    pending = (lineno, line.strip())
                else:
                    skipped += 1
                continue
            facts.extend(table.facts(row, lineno, line.strip()))
        if table is None:
            warnings.append("no df header (`Filesystem ... Mounted on`) found")
        if skipped:
            warnings.append(f"{skipped} line(s) did not fit the df columns and were skipped")
        if si:
            warnings.append("sizes read as powers of 1000 (a lower-case `k` suggests df -H)")
        return DocumentResult(tuple(facts), tuple(warnings))
