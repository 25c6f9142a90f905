"""The fallback kind: text of unknown origin. Every line is still scanned by the rules.

Text of unknown origin has no structure of its own, but a process's death reads the same in
any text (a shell's `Killed`, a debugger's `Program received signal`, `kubectl describe`'s
`Reason: OOMKilled`, a `sacct` state, a traceback as the last output): its collector keeps
those (`parsers.launcher.deaths`, whose docstring lists the fact keys), and what the job ran on
and was built with (`parsers.launcher.build_lines`: the GPU, the CUDA build), which the
decision pairs across inputs, where it was hosted (`parsers.launcher.platform_lines`), and a
rendezvous barrier counting more processes than the job has (`parsers.launcher.barrier_lines`).
"""

from __future__ import annotations

from crashlens.model import InputKind
from crashlens.parsers.base import LogCollector, LogParser, patterns_of
from crashlens.parsers.launcher.barrier_lines import BARRIER_ANCHORS
from crashlens.parsers.launcher.build_lines import BUILD_ANCHORS
from crashlens.parsers.launcher.deaths import DEATH_ANCHORS, DeathSigns
from crashlens.parsers.launcher.platform_lines import PLATFORM_ANCHORS
from crashlens.parsers.launcher.request_lines import REQUEST_ANCHORS

_TABLE = (*DEATH_ANCHORS, *BUILD_ANCHORS, *PLATFORM_ANCHORS, *REQUEST_ANCHORS, *BARRIER_ANCHORS)


class PlainTextParser(LogParser):
    """Any text: no prefixes; the generic rules apply to each line, and death signs are kept."""

    kind = InputKind.OTHER
    name = "plain text"
    anchors = patterns_of(_TABLE)

    @staticmethod
    def sniff(head: str) -> float:
        return 0.05 if head.strip() else 0.0

    def collector(self, path: str) -> LogCollector:
        return DeathSigns(path, _TABLE)
