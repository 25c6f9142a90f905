"""Mount tables: `findmnt` (tree, `-l`, `-r`, any `-o` columns), `mount` and `/proc/mounts`.

What a path lies on decides what an errno means: `open(O_DIRECT)` fails with EINVAL on a
filesystem without direct I/O (eCryptfs home directories, tmpfs before Linux 6.6), locks fail on
some network filesystems, a FUSE mount may hang. These listings say which filesystem type is
mounted where.

* `findmnt` prints a header (`TARGET  SOURCE  FSTYPE  OPTIONS`, or the columns of `-o`) and one
  row per mount; the default tree draws the nesting before the target with box-drawing
  characters (`├─`, `└─`, `│`) or, without UTF-8, ASCII (`|-`, `` `- ``). Columns are taken in
  the header's order from the row's whitespace-separated tokens (findmnt escapes spaces in
  paths as `\\x20`, so a path is one token).
* `mount` prints `SOURCE on TARGET type FSTYPE (OPTIONS)`.
* `/proc/mounts` (and `/etc/mtab`) print `SOURCE TARGET FSTYPE OPTIONS 0 0`.

Facts (every one has its line number and the row as text):

* `mount.point`: str the mount point (a path: rules join it with a failing path, as they do
  `docker.mount`); attrs `fstype` (`ext4`, `ecryptfs`, `nfs4`, `fuse.sshfs`), `source` (the
  device or server, when the listing has it), `options` (when it has them).
"""

from __future__ import annotations

import re

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact

_FINDMNT_HEADER_RE = re.compile(r"^[ \t]*+TARGET(?:[ \t]++[A-Z][A-Z0-9_%:-]*+)++[ \t]*+$")
_TREE_PREFIX_RE = re.compile(r"^[ \t│├└─|`-]*+")
_MOUNT_RE = re.compile(r"^(\S++) on (/\S*+) type (\S++) \(([^)\n]*+)\)[ \t]*+$")
_PROC_MOUNTS_RE = re.compile(r"^(\S++) (/\S*+) (\S++) (\S++) [0-9]++ [0-9]++[ \t]*+$")
_SNIFF_LINES = 200


def _findmnt_columns(line: str) -> list[str] | None:
    """The header's column names, when `line` is a findmnt header naming FSTYPE."""
    if not _FINDMNT_HEADER_RE.match(line):
        return None
    columns = line.split()
    return columns if "FSTYPE" in columns else None


def _findmnt_row(line: str, columns: list[str]) -> dict[str, str] | None:
    """A findmnt row's cells by column name, or None for a line that is no row."""
    tokens = _TREE_PREFIX_RE.sub("", line).split()
    if len(tokens) < columns.index("FSTYPE") + 1 or not tokens[0].startswith("/"):
        return None
    return dict(zip(columns, tokens, strict=False))


def _unescaped(path: str) -> str:
    """A path as findmnt and /proc/mounts escape it (`\\x20`, `\\040`), with its spaces back."""
    if "\\" not in path:
        return path
    return path.replace("\\x20", " ").replace("\\040", " ")


def _mount_facts(text: str, path: str) -> list[Fact]:
    facts: list[Fact] = []
    columns: list[str] | None = None
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = clean_line(raw)
        if not line.strip():
            continue
        header = _findmnt_columns(line)
        if header is not None:
            columns = header
            continue
        cells: dict[str, str] | None = None
        if columns is not None:
            cells = _findmnt_row(line, columns)
        if cells is None:
            found = _MOUNT_RE.match(line.strip())
            if found:
                source, target, fstype, options = found.groups()
            else:
                found = _PROC_MOUNTS_RE.match(line.strip())
                if not found:
                    continue
                source, target, fstype, options = found.groups()
            cells = {"SOURCE": source, "TARGET": target, "FSTYPE": fstype, "OPTIONS": options}
        fstype = cells.get("FSTYPE", "")
        target = cells.get("TARGET", "")
        if not fstype or not target.startswith("/"):
            continue
        facts.append(
            fact(
                "mount.point",
                _unescaped(target),
                path,
                lineno,
                text=line.strip(),
                fstype=fstype,
                source=cells.get("SOURCE"),
                options=cells.get("OPTIONS"),
            )
        )
    return facts


class MountsParser(DocumentParser):
    """`findmnt`, `mount` or `/proc/mounts`: which filesystem type is mounted where."""

    kind = InputKind.MOUNTS
    name = "mount table"
    filenames = ("findmnt*", "mounts", "mounts*.txt", "mount.txt", "mount.out", "mtab")

    @staticmethod
    def sniff(head: str) -> float:
        if "TARGET" not in head and " type " not in head and " 0 0" not in head:
            return 0.0  # substring gate: every sniffer runs on every file of a scan
        lines = [clean_line(line) for line in head.splitlines()[:_SNIFF_LINES] if line.strip()]
        if not lines:
            return 0.0
        if _findmnt_columns(lines[0]) is not None:
            return 1.0 if "SOURCE" in lines[0] or len(lines) > 1 else 0.8
        rows = sum(
            1
            for line in lines
            if _MOUNT_RE.match(line.strip()) or _PROC_MOUNTS_RE.match(line.strip())
        )
        if rows < 2:
            return 0.0
        ratio = rows / len(lines)
        return 0.9 * ratio if ratio >= 0.5 else 0.1

    def parse(self, text: str, path: str) -> DocumentResult:
        found = _mount_facts(text, path)
        return DocumentResult(tuple(found), () if found else ("no mount rows found",))
