"""The fallback kind: text of unknown origin. Every line is still scanned by the rules."""

from __future__ import annotations

from crashlens.model import Fact, InputKind, Line
from crashlens.parsers.base import LogCollector, LogParser


class _NoFacts(LogCollector):
    def feed(self, line: Line, anchors: frozenset[int]) -> None:
        """Plain text has no structure to collect."""

    def finish(self) -> list[Fact]:
        return []


class PlainTextParser(LogParser):
    """Any text: no prefixes, no facts; the generic rules still apply to each line."""

    kind = InputKind.OTHER
    name = "plain text"

    @staticmethod
    def sniff(head: str) -> float:
        return 0.05 if head.strip() else 0.0

    def collector(self, path: str) -> LogCollector:
        return _NoFacts()
