"""`ipcs -m` (System V shared memory segments) and `ipcs -l` (IPC limits), util-linux format.

PyTorch and NCCL share memory through POSIX files in /dev/shm, not SysV segments, so this is
weak evidence; its use is a sum of what SysV segments hold and the kernel's segment limits.
Plain `ipcs` prints three sections (messages, shared memory, semaphores); only the shared
memory rows are counted. The column of each field comes from the header, so `ipcs -m` variants
with other columns (`-p`, `-t`) do not give wrong sizes.

Facts:

* `ipcs.shm_segments`: int number of segments (0 for an empty table); attrs `total_bytes`,
  `dest` (segments marked for removal, status `dest`). Line: the section header.
* `ipcs.shmmax_kb`: int `max seg size (kbytes)` from `ipcs -l`.
* `ipcs.shmall_kb`: int `max total shared memory (kbytes)` from `ipcs -l`.
* `ipcs.shmmni`: int `max number of segments` from `ipcs -l` (shared memory section).
"""

from __future__ import annotations

import re

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact
from crashlens.text.values import bounded_int

_SNIFF_SHM_RE = re.compile(r"^-{3,}[ \t]*Shared Memory (?:Segments|Limits)[ \t]*-{3,}", re.M)
_SNIFF_OTHER_RE = re.compile(
    r"^-{3,}[ \t]*(?:Message Queues|Semaphore Arrays|Messages Limits|Semaphore Limits)"
    r"[ \t]*-{3,}",
    re.M,
)
_SNIFF_HEADER_RE = re.compile(r"^key[ \t]+shmid[ \t]+owner[ \t]+perms", re.M)
_LIMIT_VALUE_RE = re.compile(r"(?<![ \t])[ \t]*(-?\d+)[ \t]*")
_SEGMENT_KEY_RE = re.compile(r"^0x[0-9a-fA-F]+$")

_LIMIT_FACTS = {
    "max seg size (kbytes)": "ipcs.shmmax_kb",
    "max total shared memory (kbytes)": "ipcs.shmall_kb",
    "max number of segments": "ipcs.shmmni",
}


def _banner(line: str) -> str | None:
    """The title of a `------ Shared Memory Segments --------` banner, or None.

    Written without a regex: `-{3,}(.*?)-{3,}` backtracks cubically on a long run of dashes.
    """
    stripped = line.strip()
    if not (stripped.startswith("---") and stripped.endswith("---")):
        return None
    if len(stripped) < 6 and not stripped.strip("-"):
        return None  # `-----`: one run of dashes cannot be both borders
    return stripped.strip("-").strip(" \t")


class _Segments:
    """Counts the rows of one `Shared Memory Segments` table."""

    def __init__(self, lineno: int, banner: str) -> None:
        self.lineno = lineno
        self.banner = banner
        self.columns: list[str] = []
        self.count = 0
        self.total = 0
        self.dest = 0

    def feed(self, line: str) -> bool:
        """Take a line under the banner; False when it is not a segment row or the header."""
        tokens = line.split()
        if not tokens:
            return True
        if tokens[0] == "key":
            self.columns = [token.lower() for token in tokens]
            return True
        if not _SEGMENT_KEY_RE.match(tokens[0]):
            return False
        self.count += 1
        if "bytes" in self.columns:
            index = self.columns.index("bytes")
            size = bounded_int(tokens[index]) if index < len(tokens) else None
            if size is not None and tokens[index].isdigit():
                self.total += size
        # `dest` (marked for removal) and `locked` share the last column, `status`.
        status_at = self.columns.index("status") if "status" in self.columns else 1
        if "dest" in tokens[status_at:]:
            self.dest += 1
        return True

    def fact(self, path: str) -> Fact:
        return fact(
            "ipcs.shm_segments",
            self.count,
            path,
            self.lineno,
            text=self.banner,
            total_bytes=self.total,
            dest=self.dest,
        )


_SNIFF_MARKERS = ("Shared Memory", "shmid", "Semaphore", "Message")
"""One of these is in every `ipcs` layout the sniffer recognises."""


class IpcsParser(DocumentParser):
    """util-linux `ipcs`, `ipcs -m` and `ipcs -l`."""

    kind = InputKind.IPCS
    name = "ipcs"
    filenames = ("ipcs*",)

    @staticmethod
    def sniff(head: str) -> float:
        # Substring gate first: every sniffer runs on every file of a scan.
        if not any(marker in head for marker in _SNIFF_MARKERS):
            return 0.0
        if _SNIFF_SHM_RE.search(head):
            return 1.0
        if _SNIFF_OTHER_RE.search(head):
            return 0.9
        if _SNIFF_HEADER_RE.search(head):
            return 0.8
        return 0.0

    def parse(self, text: str, path: str) -> DocumentResult:
        facts: list[Fact] = []
        section = ""
        segments: _Segments | None = None
        for lineno, raw in enumerate(text.split("\n"), start=1):
            line = clean_line(raw)
            banner = _banner(line)
            if banner is not None:
                if segments is not None:
                    facts.append(segments.fact(path))
                section = banner.lower()
                segments = (
                    _Segments(lineno, line.strip()) if "shared memory seg" in section else None
                )
                continue
            if segments is not None:
                segments.feed(line)
            elif "shared memory limits" in section:
                facts.extend(self._limit(line, lineno, path))
        if segments is not None:
            facts.append(segments.fact(path))
        warnings = () if facts else ("no ipcs shared memory section found",)
        return DocumentResult(tuple(facts), warnings)

    @staticmethod
    def _limit(line: str, lineno: int, path: str) -> list[Fact]:
        # `label = value`: the label is what precedes the last `=` (a number holds none)
        label, equals, rest = line.rpartition("=")
        found = _LIMIT_VALUE_RE.fullmatch(rest) if equals else None
        key = _LIMIT_FACTS.get(label.strip(" \t").lower()) if found else None
        value = bounded_int(found.group(1)) if found else None
        if key is None or value is None:
            return []
        return [fact(key, value, path, lineno, text=line.strip())]
