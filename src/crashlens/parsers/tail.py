"""The last lines of a log, kept while it streams past.

The scan only decodes lines that a rule or an anchor asks for, so nothing else would know
what a log printed last. `Tail` watches the newline-cut chunks go by and keeps the last
`TAIL_BYTES` of them (bounded, whatever the size of the log) and the count of newlines
before them, so the last lines come back with their real line numbers; the engine hands
them to the collector's `end` (what they mean: `parsers.launcher.ending`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from crashlens.model import Line
from crashlens.parsers.base import TAIL_LINES, Parser, clean_line

TAIL_BYTES = 16 * 1024
"""Bytes of the end of a log kept: room for a traceback and the launcher's summary."""


class Tail:
    """The last `TAIL_BYTES` of a stream of newline-cut chunks, and where they start."""

    def __init__(self) -> None:
        self.newlines = 0
        """Newlines in every chunk seen."""
        self.total = 0
        self.before = b""
        """The end of the chunks before the last one (at most `TAIL_BYTES`)."""
        self.last = b""

    def watch(self, chunks: Iterable[bytes], *, count: bool = True) -> Iterator[bytes]:
        """Pass the chunks through, remembering their end; `count=False` where the caller
        learns the newline count elsewhere (the scan counts them for its line numbers: a
        second count cost half a second on a 1 GiB log) and sets `newlines` itself."""
        for chunk in chunks:
            if count:
                self.newlines += chunk.count(b"\n")
            self.total += len(chunk)
            if self.last:
                self.before = (self.before + self.last[-TAIL_BYTES:])[-TAIL_BYTES:]
            self.last = chunk
            yield chunk

    @property
    def terminated(self) -> bool:
        """Whether the stream ends with a newline."""
        return self.last.endswith(b"\n") or not self.last

    def lines(self, parser: Parser, path: str, limit: int = TAIL_LINES) -> tuple[Line, ...]:
        """The last lines (at most `limit`), located with their real line numbers."""
        window = (self.before + self.last[-TAIL_BYTES:])[-TAIL_BYTES:]
        if not window:
            return ()
        pieces = window.decode("utf-8", errors="replace").split("\n")
        if len(window) < self.total:
            pieces = pieces[1:]  # the window starts inside a line
        if self.terminated:
            pieces = pieces[:-1]  # the empty piece after the final newline
        # The last piece's line number: a final newline ends line N, else line N+1 is open.
        last_lineno = self.newlines if self.terminated else self.newlines + 1
        first = last_lineno - len(pieces) + 1
        kept = list(enumerate(pieces, start=first))[-limit:]
        return tuple(parser.located(path, n, clean_line(raw)) for n, raw in kept)
