"""What a parser is: a kind, a content sniffer, and how it turns an input into facts.

Two shapes, because inputs come in two sizes:

* `DocumentParser` (docker inspect, nvidia-smi, df, ulimit, ...): small structured outputs,
  read whole and parsed into typed `Fact`s.
* `LogParser` (launcher output, kernel logs, plain text): possibly gigabytes, never held in
  memory. The scanning engine finds the lines that match a rule or one of the parser's
  `anchors` and feeds only those, in order, to a `LogCollector`, which keeps bounded state
  and turns them into facts (the torchelastic summary, exit codes, an Xid's GPU...).
  A collector with handlers declares them in one table of `Anchor`s (pattern, handler, the
  one-value facts that settle it) and derives from `AnchoredCollector`, which dispatches
  and settles; the parser's `anchors` are the table's patterns (`patterns_of`).

Both split a raw line into its prefix fields and message with `split_line`.
Sniffers must never raise: `safe_sniff` turns an exception into 0.0 (Pygments style).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from crashlens.model import Clock, Fact, FactValue, InputKind, Line
from crashlens.text.linear import linear_text

TAIL_LINES = 40
"""Last lines of a log a collector's `end` gets (the end of a traceback is within them)."""

# An OSC (`ESC ]`) ends with BEL or ST (`ESC \`) and holds no other ESC: without `\x1b` in
# its class, a line of unterminated `ESC ]` made every one of them rescan the rest of the line.
ANSI_RE = re.compile(
    r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\n\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]"
)


def clean_line(raw: str) -> str:
    """Remove ANSI escapes, NUL bytes and trailing line-ending characters."""
    if "\x1b" in raw:
        raw = ANSI_RE.sub("", raw)
    if "\x00" in raw:
        raw = raw.replace("\x00", "")
    return raw.rstrip("\r\n")


@dataclass(frozen=True, slots=True)
class Split:
    """A line split into its prefix fields and the message after them."""

    text: str
    rank: int | None = None
    host: str | None = None
    timestamp: float | None = None
    clock: Clock | None = None
    """What `timestamp` counts: set together with it by the prefix that gave it."""


@dataclass(frozen=True, slots=True)
class DocumentResult:
    """What a document parser read: facts, and warnings about how it read them."""

    facts: tuple[Fact, ...]
    warnings: tuple[str, ...] = ()


class Parser(ABC):
    """Common metadata and sniffing of every parser."""

    kind: ClassVar[InputKind]
    name: ClassVar[str]
    """Human label shown in reports."""
    filenames: ClassVar[tuple[str, ...]] = ()
    """fnmatch globs on the base name (lower-case); a match adds 0.2 to the sniff score."""

    @staticmethod
    @abstractmethod
    def sniff(head: str) -> float:
        """Score in [0, 1] that `head` (the first 64 KiB, decoded) is this kind."""

    def split_line(self, raw: str) -> Split:
        """Split a cleaned line into prefix fields and message (default: no prefix)."""
        return Split(text=raw)

    def make_line(self, path: str, lineno: int, raw: str) -> Line:
        """Build a located `Line` from a raw line of this kind."""
        return self.located(path, lineno, clean_line(raw))

    def located(self, path: str, lineno: int, cleaned: str) -> Line:
        """Build a located `Line` from a line already passed through `clean_line`."""
        split = self.split_line(cleaned)
        return Line(
            path=path,
            lineno=lineno,
            raw=cleaned,
            text=split.text,
            rank=split.rank,
            host=split.host,
            timestamp=split.timestamp,
            clock=split.clock,
        )


class DocumentParser(Parser):
    """A parser for a small structured input read whole."""

    @abstractmethod
    def parse(self, text: str, path: str) -> DocumentResult:
        """Turn the whole input into facts. Must tolerate truncation and garbage."""


class LogCollector(ABC):
    """Bounded state that turns the anchor lines of one log into facts, fed in order."""

    settled: set[int]
    """Anchors whose further lines can add nothing (a one-value fact already found): a line
    that matched only these is not even decoded. Filled by the collector as it goes; a
    collector must only settle an anchor when skipping its lines changes no fact
    (`AnchoredCollector` fills it from each `Anchor.settles`)."""

    def __init__(self) -> None:
        self.settled = set()

    @abstractmethod
    def feed(self, line: Line, anchors: frozenset[int]) -> None:
        """Take one line that matched at least one rule or anchor (`anchors`: their indexes)."""

    def end(self, tail: Sequence[Line], terminated: bool) -> None:  # noqa: B027 (optional hook)
        """Take the log's last lines (`parsers.tail.Tail`), after every fed line; `terminated`:
        whether a newline ends the log. Collectors that read how a log ends override it."""

    @abstractmethod
    def finish(self) -> list[Fact]:
        """Return the facts once every line has been fed."""


C = TypeVar("C", bound="AnchoredCollector")


@dataclass(frozen=True, slots=True, eq=False)
class Anchor(Generic[C]):
    """One kind of line a collector needs, and what it does with it.

    The pattern is line-safe, because the scan runs it over a whole buffer at once: no `\\s`
    (write `[ \\t]`), negated classes exclude `\\n` (`[^ \\n]`), no lookbehind (`line_safety`
    checks these); a literal of 3+ characters lets the prefilter skip most lines. It may match
    more lines than the handler's precise regexes (`\\b` and `^` are left to them): the
    handler re-checks.
    Anchors compare by identity: one record per table entry.
    """

    pattern: str
    handler: Callable[[C, Line], None] | None = None
    """Called with each line that matched, in table order among the line's anchors; None for
    an anchor read only by the collector's `on_line` (a state machine spanning anchors)."""
    settles: tuple[str, ...] = ()
    """One-value fact keys (`AnchoredCollector.keep_first`): once all are known, more lines of
    this anchor change nothing and the engine skips them undecoded. Declare keys only for an
    anchor whose lines serve nothing else (no `on_line` reads it)."""


def patterns_of(table: Sequence[Anchor[Any]]) -> tuple[str, ...]:
    """The scan patterns of an anchor table, in table order (a line reports their indexes)."""
    return tuple(anchor.pattern for anchor in table)


def line_safety(pattern: str) -> str | None:
    """Which line-safety rule `pattern` breaks (see `Anchor`), or None."""
    if "\\s" in pattern:
        return "\\s may match a newline: write [ \\t]"
    if "(?<" in pattern:
        return "no lookbehind"
    for negated in re.findall(r"\[\^((?:\\.|[^\]])*)\]", pattern):
        if "\\n" not in negated:
            return f"negated class [^{negated}] must exclude \\n"
    return None


class AnchoredCollector(LogCollector):
    """A collector driven by an `Anchor` table: dispatch and settling written once.

    `feed` calls, for a line, `on_line` and then the handlers of the anchors it matched (in
    table order), and settles an anchor once all the one-value facts it declares are known.
    """

    def __init__(self, path: str, table: Sequence[Anchor[Any]]) -> None:
        super().__init__()
        self.path = path
        self.table = table
        self.singles: dict[str, Fact] = {}
        """The first fact of each one-value key (`keep_first`): what settling looks at."""

    def feed(self, line: Line, anchors: frozenset[int]) -> None:
        """Dispatch the line to the handlers of the anchors it matched (`anchors`: indexes)."""
        table = self.table
        order = sorted(i for i in anchors if 0 <= i < len(table))
        self.on_line(line, tuple(table[i] for i in order))
        for index in order:
            anchor = table[index]
            if anchor.handler is not None:
                anchor.handler(self, line)
            if anchor.settles and all(key in self.singles for key in anchor.settles):
                self.settled.add(index)

    def on_line(self, line: Line, matched: tuple[Anchor[Any], ...]) -> None:
        """Called for every fed line before its handlers, with the anchors it matched.

        For state that spans anchors: a report whose headers, records and fields each have
        their own anchor, and that must also notice any later line (the report has ended).
        """

    def keep_first(self, key: str, value: FactValue, line: Line, **attrs: FactValue | None) -> None:
        """Keep the first value of a one-value fact (a version, the world size...)."""
        if key not in self.singles:
            self.singles[key] = fact(key, value, self.path, line.lineno, text=line.raw, **attrs)


class LogParser(Parser):
    """A parser for a line-oriented log that may be far too big to hold in memory."""

    anchors: ClassVar[tuple[str, ...]] = ()
    """Line-safe regexes whose lines the collector needs, on top of the rule hits: the
    patterns of the collector's `Anchor` table (`patterns_of`), whose indexes `feed` gets."""

    @abstractmethod
    def collector(self, path: str) -> LogCollector:
        """A fresh collector for one input."""


def safe_sniff(parser: type[Parser] | Parser, head: str) -> float:
    """Run a sniffer, clamping its score to [0, 1] and turning an exception into 0."""
    try:
        score = float(parser.sniff(head))
    except Exception:
        return 0.0
    return min(1.0, max(0.0, score))


def fact(
    key: str,
    value: FactValue,
    path: str,
    lineno: int | None = None,
    text: str | None = None,
    **attrs: FactValue | None,
) -> Fact:
    """Build a Fact; qualifiers that are None are dropped."""
    kept = tuple((name, v) for name, v in attrs.items() if v is not None)
    shown = text if text is not None else f"{key} = {value}"
    return Fact(key=key, value=value, path=path, lineno=lineno, text=shown, attrs=kept)


def iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, raw line) counting `\\n` only, as the scanner does."""
    for index, raw in enumerate(text.split("\n"), start=1):
        if raw or index == 1:
            yield index, raw


_MAX_KNOWN_LINES = 65536
"""Distinct line texts `collect_text` remembers the anchors of."""


def collect_text(parser: LogParser, text: str, path: str) -> tuple[list[Line], list[Fact]]:
    """Feed every line of a small text to a log parser (tests and small inputs)."""
    compiled = [linear_text(pattern) for pattern in parser.anchors]
    collector = parser.collector(path)
    lines: list[Line] = []
    # Which anchors a line holds depends on its text alone, and a log repeats lines (blank
    # CRLF lines, a progress line): each distinct text is searched once (every anchor in
    # Python costs ~65 us a line; 198,000 blank lines took 13 s).
    known: dict[str, frozenset[int]] = {}
    for lineno, raw in iter_lines(text):
        line = parser.make_line(path, lineno, raw)
        lines.append(line)
        hits = known.get(line.raw)
        if hits is None:
            hits = frozenset(i for i, rx in enumerate(compiled) if rx.search(line.raw))
            if len(known) < _MAX_KNOWN_LINES:
                known[line.raw] = hits
        if hits:
            collector.feed(line, hits)
    collector.end(lines[-TAIL_LINES:], text.endswith("\n") or not text)
    return lines, collector.finish()


def first_match(patterns: Iterable[re.Pattern[str]], text: str) -> re.Match[str] | None:
    """The first pattern's match in text, or None."""
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found
    return None
