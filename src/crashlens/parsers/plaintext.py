"""The fallback kind: text of unknown origin. Every line is still scanned by the rules.

Text of unknown origin has no structure of its own, and it is read by the launcher's collector
all the same (`parsers.launcher`, whose docstring lists the fact keys), without the launcher's
line prefixes: a program's output is the same output whatever started it, and the kind is
decided from a file's first 64 KiB only. A plain `python train.py` log whose head is progress
bars and whose traceback comes megabytes later, a notebook's output, a console capture are all
`other`, and they need what a launcher log gets: the traceback's exception and innermost frame
(`python.stack`, which tells /dev/shm from the disk behind one `No space left on device`),
whether a traceback was a finalizer's or a teardown's, the out-of-memory figures, and a
process's death however any text shows it (a shell's `Killed`, a debugger's `Program received
signal`, `kubectl describe`'s `Reason: OOMKilled`, a `sacct` state). Only the launcher's own
prefixes (`[rank3]:`, a pdsh host) are not looked for: in text of unknown origin a word before
a colon is no host.
"""

from __future__ import annotations

from crashlens.model import InputKind
from crashlens.parsers.base import LogCollector, LogParser, patterns_of
from crashlens.parsers.launcher.collector import ANCHORS, LauncherCollector


class PlainTextParser(LogParser):
    """Any text: no prefixes; the rules apply to each line, and the launcher's facts are kept."""

    kind = InputKind.OTHER
    name = "plain text"
    anchors = patterns_of(ANCHORS)

    @staticmethod
    def sniff(head: str) -> float:
        return 0.05 if head.strip() else 0.0

    def collector(self, path: str) -> LogCollector:
        return LauncherCollector(path)
