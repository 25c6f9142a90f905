"""How much work one input may cost: its head and tail in full, the repeats of its middle counted.

The work of a scan is per candidate line (decoding it, splitting its prefix, re-checking
rules, feeding the parser's collector: about 20 us each), so a log whose every line looks like
an event costs per line: a plain 1 GiB file of NCCL watchdog lines took about two minutes.
What decides a diagnosis sits at the two ends of a log: the start-up (versions, world size,
NCCL set-up) at its head, the death (traceback, signals, the launcher's summary) at its tail.
The middle of a huge log is the same few lines again and again. So, per input:

* every line of the first `head_bytes` and of the last `tail_bytes` is matched in full, as in
  a small log (a log no longer than their sum is read exactly as before);
* in between, each scan pattern (a rule's or a parser anchor's) has its first `middle_lines`
  lines there matched in full; after that its lines are counted, not parsed (a line another
  pattern still wants is parsed for that one). A pattern seen fewer times, such as one error
  in the middle, is matched wherever it is;
* the input's note in the report says so: how much was thinned, which patterns and about how
  many of their lines were counted rather than parsed.

The tail is known only once the input ends (a stream's size is not known in advance), so the
last `tail_bytes` are held back, in memory, until more follows them or the input ends.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from enum import Enum

from crashlens.inputs.limits import MIB, mib
from crashlens.match.scan import ScanTally


@dataclass(frozen=True, slots=True)
class WorkLimits:
    """How an input's lines are matched: in full at both ends, thinned in between."""

    head_bytes: int = 8 * MIB
    """Every line of the first this many bytes is matched in full."""
    tail_bytes: int = 8 * MIB
    """Every line of the last this many bytes is matched in full."""
    middle_lines: int = 100
    """In between, lines per scan pattern matched in full; later ones are counted."""


ENVIRONMENT: dict[str, tuple[str, int]] = {
    "head_bytes": ("CRASHLENS_FULL_HEAD_MB", MIB),
    "tail_bytes": ("CRASHLENS_FULL_TAIL_MB", MIB),
    "middle_lines": ("CRASHLENS_MIDDLE_LINES", 1),
}
"""Per limit, the environment variable that sets it and the unit the variable counts in."""


def work_limits(environ: Mapping[str, str] | None = None) -> WorkLimits:
    """The default limits, with those set in the environment (a bad value keeps the default)."""
    environ = os.environ if environ is None else environ
    chosen: dict[str, int] = {}
    for item in fields(WorkLimits):
        variable, unit = ENVIRONMENT[item.name]
        text = environ.get(variable, "").strip()
        try:
            value = float(text) if text else None
        except ValueError:
            value = None
        if value is not None and 0 < value < 1e15:  # NaN, inf and negatives fail this too
            chosen[item.name] = max(1, int(value * unit))
    return WorkLimits(**chosen)


class Region(Enum):
    """Where in an input a chunk lies."""

    HEAD = "head"
    MIDDLE = "middle"
    TAIL = "tail"


def _line_end(chunk: bytes, at: int) -> int:
    """The first line start at or after `at` (just past a newline), so that a cut there keeps
    whole lines before it; `len(chunk)` when no newline follows, 0 when `at` is not past 0."""
    if at <= 0:
        return 0
    found = chunk.find(b"\n", at - 1)
    return found + 1 if found >= 0 else len(chunk)


class Regions:
    """Passes newline-cut chunks through, cut again where the head ends and the tail starts.

    `on_enter` is called with MIDDLE before the first chunk of the middle is passed on and
    with TAIL before the first chunk of the tail, when there is a middle (an input no longer
    than the head and the tail has none). A consumer that takes each chunk's lines before the
    next chunk (the scan does) therefore sees the change before the chunk's first line.
    """

    def __init__(self, limits: WorkLimits, on_enter: Callable[[Region], None]) -> None:
        self.limits = limits
        self.on_enter = on_enter
        self.region = Region.HEAD
        self.offset = 0
        """Bytes passed on so far."""
        self.middle: tuple[int, int] | None = None
        """(start, end) byte offsets of the middle, once the input has ended."""
        self._middle_start: int | None = None

    def split(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """The chunks, in order, each within one region."""
        held: deque[bytes] = deque()
        held_bytes = 0
        tail_bytes = self.limits.tail_bytes
        for chunk in chunks:
            if not held and self._middle_start is None:
                room = self.limits.head_bytes - self.offset
                if room > 0:
                    cut = _line_end(chunk, room) if len(chunk) > room else len(chunk)
                    yield from self._pass(chunk[:cut] if cut < len(chunk) else chunk)
                    chunk = chunk[cut:]
                    if not chunk:
                        continue
            held.append(chunk)
            held_bytes += len(chunk)
            while held_bytes - len(held[0]) >= tail_bytes:
                first = held.popleft()
                held_bytes -= len(first)
                yield from self._middle_chunk(first)
        if held and held_bytes > tail_bytes:
            first = held.popleft()
            cut = first.rfind(b"\n", 0, held_bytes - tail_bytes) + 1  # the tail: a line start
            if cut > 0:
                yield from self._middle_chunk(first[:cut])
            if cut < len(first):
                held.appendleft(first[cut:])
        if held and self._middle_start is not None:
            self.middle = (self._middle_start, self.offset)
            self.region = Region.TAIL
            self.on_enter(Region.TAIL)
        elif self._middle_start is not None:
            self.middle = (self._middle_start, self.offset)
        while held:
            yield from self._pass(held.popleft())

    def _middle_chunk(self, chunk: bytes) -> Iterator[bytes]:
        if self._middle_start is None:
            self._middle_start = self.offset
            self.region = Region.MIDDLE
            self.on_enter(Region.MIDDLE)
        yield from self._pass(chunk)

    def _pass(self, chunk: bytes) -> Iterator[bytes]:
        if chunk:
            self.offset += len(chunk)
            yield chunk


def _rounded(count: int) -> int:
    """An estimate to three significant digits (6,319,436 -> 6,320,000)."""
    digits = len(str(count))
    return round(count, 3 - digits) if digits > 3 else count


@dataclass(frozen=True, slots=True)
class _Thinned:
    """Where the scan stood when a pattern spent its lines in the middle."""

    searched: int
    counted: int
    dropped: int


@dataclass(frozen=True, slots=True)
class Skipped:
    """One pattern whose later lines in the middle were counted, not parsed."""

    pattern: int
    lines: int
    """Lines (estimated where the search left the pattern out) counted, not parsed."""
    exact: bool


class WorkBudget:
    """The middle's budget of lines per scan pattern, kept by the engine's scan of one input.

    `ignored` is the scan's live set of patterns to leave out (`scan_chunks`); `steady` the
    part of it that holds everywhere (settled anchors, rules with all their hits), which the
    engine fills. A pattern that spends its lines in the middle joins `ignored` until the
    tail, where it leaves it. `tally` is what the scan counted (`scan_chunks`).
    """

    def __init__(self, limits: WorkLimits) -> None:
        self.limits = limits
        self.ignored: set[int] = set()
        self.steady: set[int] = set()
        self.tally = ScanTally()
        self.regions = Regions(limits, self._enter)
        self.in_middle = False
        self.used: dict[int, int] = {}
        self.thinned: dict[int, _Thinned] = {}
        self.late: dict[int, int] = {}
        """Lines of a thinned pattern found by a search made before it was thinned."""
        self._end: tuple[int, int, dict[int, int], dict[int, int]] | None = None

    def _enter(self, region: Region) -> None:
        if region is Region.MIDDLE:
            self.in_middle = True
            return
        self.in_middle = False
        self.tally.counting = False
        tally = self.tally
        self._end = (tally.searched, tally.counted, dict(tally.dropped), dict(tally.late))
        self.ignored.difference_update(p for p in self.thinned if p not in self.steady)

    def take(self, patterns: frozenset[int]) -> frozenset[int]:
        """The patterns a candidate line is parsed for (all of them outside the middle)."""
        if not self.in_middle:
            return patterns
        thinned = self.thinned
        if thinned and not thinned.keys().isdisjoint(patterns):
            for pattern in patterns:
                if pattern in thinned:
                    self.late[pattern] = self.late.get(pattern, 0) + 1
            patterns = frozenset(p for p in patterns if p not in thinned)
        used, limit, ignored = self.used, self.limits.middle_lines, self.ignored
        for pattern in patterns:
            if pattern in ignored:
                continue
            count = used.get(pattern, 0) + 1
            used[pattern] = count
            if count >= limit:
                tally = self.tally
                dropped = tally.dropped.get(pattern, 0)
                thinned[pattern] = _Thinned(tally.searched, tally.counted, dropped)
                ignored.add(pattern)
                tally.counting = True  # from now on: what counts a thinned pattern's lines
        return patterns

    def skipped(self) -> list[Skipped]:
        """Per thinned pattern, its lines in the middle counted, not parsed: most first.

        Counted exactly where the search still reported the pattern; where the search left it
        out (`scan_chunks` narrows), estimated from the share of the middle searched with it.
        """
        tally = self.tally
        if self._end is None:
            searched, counted, dropped, late = (
                tally.searched, tally.counted, tally.dropped, tally.late,
            )  # fmt: skip
        else:
            searched, counted, dropped, late = self._end
        found = []
        for pattern, at in self.thinned.items():
            # Searched after the thinning: the piece it happened in is in `late`, whole.
            seen = dropped.get(pattern, 0) - at.dropped
            span, share = searched - at.searched, counted - at.counted
            lines = round(seen * span / share) if share > 0 else seen
            lines += late.get(pattern, 0) + self.late.get(pattern, 0)
            found.append(Skipped(pattern, lines, exact=share >= span))
        return sorted(found, key=lambda s: (-s.lines, s.pattern))

    def note(self, name: Callable[[int], str]) -> str | None:
        """What the report says of the thinned middle (None: nothing was left unparsed)."""
        middle = self.regions.middle
        skipped = self.skipped()
        if middle is None or not skipped:
            return None
        start, end = middle
        total = self.regions.offset
        most = skipped[0]
        lines = most.lines if most.exact else _rounded(most.lines)
        about = "" if most.exact else "about "
        names = ", ".join(name(s.pattern) for s in skipped[:3])
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        variable = ENVIRONMENT["middle_lines"][0]
        return (
            f"matched line by line in its first {mib(start)} and last {mib(total - end)}; in "
            f"the {mib(end - start)} between, the lines of {len(skipped)} pattern"
            f"{'s' if len(skipped) != 1 else ''} repeated past {self.limits.middle_lines} "
            f"were counted, not parsed ({names}{more}; the most repeated: {about}"
            f"{lines:,} more lines), so counts in facts cover the parsed lines only "
            f"(work per input is bounded: {variable})"
        )
