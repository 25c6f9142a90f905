"""The fallback kind: text of unknown origin. Every line is still scanned by the rules."""

from __future__ import annotations

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import AnchoredCollector, LogCollector, LogParser


class _NoFacts(AnchoredCollector):
    """Plain text has no structure to collect: no anchors, no facts."""

    def __init__(self, path: str) -> None:
        super().__init__(path, ())

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
        return _NoFacts(path)
