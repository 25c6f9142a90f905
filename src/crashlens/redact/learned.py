"""Where learned names stand in a text, with matchers built for the names in levels.

`Redactor` learns host, user and account names as it reads, and writes each text with every
name learned so far. One matcher of all names, built again whenever a name was learned since
the last text, made a run of small texts that each teach a name quadratic: every text paid
for compiling all names before it (1,500 one-line texts took 60 s with Hyperscan, 114 s
without). Here the names are kept in levels, as a binary counter keeps its bits: the names
learned since the last text make a new level, and a level is merged with the one before it
while that one is not larger. A name is compiled O(log n) times in all, and a text is
searched by O(log n) matchers at most; a long text first merges every level into one (one
compile is cheap next to searching megabytes, and one matcher searches faster).

Every level reports, for each place, the longest of its names that starts there; the places
of all levels, longest first at each, then give what one alternation of all names (longest
first) finds with `re.finditer`: the longest name at the leftmost place, then the same from
its end on. With one level that is the level's own search, as before levels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crashlens.redact.gates import Literals
from crashlens.redact.names import names_pattern

Span = tuple[int, int, bytes]
"""(start, end, name) of a learned name in a folded text."""

_MERGE_ALL_FROM = 64 * 1024
"""A text this long (bytes) is searched by one matcher of every name: merging the levels
costs one compile, and searching megabytes with log n matchers costs more."""


@dataclass
class _Level:
    """A matcher of `names` (a run of the learned names, in learning order)."""

    names: list[bytes]
    literals: Literals | None = None
    pattern: re.Pattern[bytes] | None = None
    places: re.Pattern[bytes] | None = None
    """`pattern` inside a lookahead: the longest name at every place, overlaps included."""


@dataclass
class LearnedNames:
    """The learned names and their matchers; `hyperscan=False` (or a name Hyperscan refuses:
    one past its length limit) takes `re` patterns (`redact.names`)."""

    hyperscan: bool
    names: list[bytes] = field(default_factory=list)
    _levels: list[_Level] = field(default_factory=list)
    _pending: list[bytes] = field(default_factory=list)

    def add(self, name: bytes) -> None:
        """A name learned now (the caller keeps them unique); compiled when a text needs it."""
        self.names.append(name)
        self._pending.append(name)

    def spans(self, folded: bytes) -> list[Span]:
        """Where the names stand in `folded`, as one alternation of them finds them."""
        if not self.names:
            return []
        self._settle(merge_all=len(folded) >= _MERGE_ALL_FROM)
        if len(self._levels) == 1:
            return self._one(self._levels[0], folded)
        found: list[tuple[int, int, bytes]] = []
        for level in self._levels:
            found.extend(self._places(level, folded))
        # the end negated: a plain sort puts the longest first at a place
        found.sort()
        spans: list[Span] = []
        resume = 0
        for start, negated, name in found:
            if start >= resume:
                resume = -negated
                spans.append((start, resume, name))
        return spans

    # --- levels --------------------------------------------------------------------------

    def _settle(self, *, merge_all: bool) -> None:
        """Make the pending names a level and merge levels as a binary counter carries (or
        every level into one)."""
        changed = bool(self._pending)
        if self._pending:
            self._levels.append(_Level(self._pending))
            self._pending = []
            while len(self._levels) > 1 and len(self._levels[-2].names) <= len(
                self._levels[-1].names
            ):
                last = self._levels.pop()
                self._levels[-1] = _Level(self._levels[-1].names + last.names)
        if merge_all and len(self._levels) > 1:
            self._levels = [_Level(list(self.names))]
            changed = True
        if changed:
            for level in self._levels:
                self._build(level)

    def _build(self, level: _Level) -> None:
        if level.literals is not None or level.pattern is not None:
            return
        if self.hyperscan:
            level.literals = Literals.build(level.names)
            if level.literals is not None:
                return
            # Hyperscan refused a name: every level takes `re` from now on (one way to find
            # the names, whichever level holds them)
            self.hyperscan = False
            for other in self._levels:
                other.literals = None
                if other is not level:
                    other.pattern = names_pattern(other.names)
        level.pattern = names_pattern(level.names)

    @staticmethod
    def _one(level: _Level, folded: bytes) -> list[Span]:
        names = level.names
        if level.literals is not None:
            return [
                (start, end, names[index]) for start, end, index in level.literals.spans(folded)
            ]
        assert level.pattern is not None
        return [(m.start(), m.end(), m.group(0)) for m in level.pattern.finditer(folded)]

    @staticmethod
    def _places(level: _Level, folded: bytes) -> list[tuple[int, int, bytes]]:
        """(start, -end, name): every occurrence of the level's names (Hyperscan), or the
        longest of them at every place that has one (`re`; the longest is all a place needs)."""
        names = level.names
        if level.literals is not None:
            return [
                (start, -end, names[index])
                for start, end, index in level.literals.occurrences(folded)
            ]
        assert level.pattern is not None
        if level.places is None:
            level.places = re.compile(b"(?=(" + level.pattern.pattern + b"))")
        return [(m.start(), -m.end(1), m.group(1)) for m in level.places.finditer(folded)]
