"""The kernel collector's bounded memory: distinct events with a count, and records whose
end is on a later line."""

from __future__ import annotations

from dataclasses import dataclass, field

from crashlens.model import FactValue, Line
from crashlens.text.values import bounded_int

MAX_ENTRIES = 2000
"""Distinct events kept per input; more are counted in `kernel.dropped_entries`."""
MESSAGE_CHARS = 300
PENDING_LINES = 8
"""How far (in lines) a pending multi-line record may be completed by a later line."""


@dataclass(slots=True)
class Entry:
    """One distinct event, counted; becomes one Fact."""

    key: str
    value: FactValue
    lineno: int
    text: str
    attrs: dict[str, FactValue | None]
    count: int = 1


@dataclass(slots=True)
class Pending:
    """A record whose end is on a later line (OOM summary, API mismatch, fatal signal...)."""

    line: Line
    fields: dict[str, str] = field(default_factory=dict)
    entry: Entry | None = None

    @property
    def lineno(self) -> int:
        """Where the record started."""
        return self.line.lineno


class EventStore:
    """Distinct events in first-seen order, at most `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: dict[tuple[object, ...], Entry] = {}
        self.dropped = 0

    def add(
        self, ident: tuple[object, ...], key: str, value: FactValue, line: Line,
        **attrs: FactValue | None,
    ) -> Entry | None:  # fmt: skip
        """Record one event; a repeat bumps the count and fills attrs still unknown."""
        found = self.entries.get(ident)
        if found is not None:
            found.count += 1
            for name, item in attrs.items():
                if found.attrs.get(name) is None and item is not None:
                    found.attrs[name] = item
            return found
        if len(self.entries) >= self.limit:
            self.dropped += 1
            return None
        base: dict[str, FactValue | None] = {"host": line.host, "timestamp": line.timestamp}
        entry = Entry(key, value, line.lineno, line.raw, {**base, **attrs})
        self.entries[ident] = entry
        return entry


def clipped(text: str) -> str:
    """The text stripped, cut to `MESSAGE_CHARS` (ending in `...` when cut)."""
    text = text.strip()
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def to_int(text: str | None) -> int | None:
    """The digits as an int; None for anything else (a missing or odd field)."""
    return bounded_int(text) if text and text.isdigit() else None
