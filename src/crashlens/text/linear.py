"""A linear-time test of whether a pattern can match a line, before `re` searches it.

Most rule patterns read `A[^\\n]*B`: a wording, anything, another wording. `re.search` tries
such a pattern from every place `A` matches, and from each one `[^\\n]*` runs to the end of
the line and backtracks looking for `B`: a long line holding many `A` and no `B` costs n^2
(n^3 with two gaps); a garbled log line of a megabyte took hours. The per-line re-check, the
engine's anchor check and the pure-Python scan run patterns on untrusted lines, so they ask
`Linear.possible` first, which only ever says no when the pattern cannot match:

* the literal texts every match holds must be in the line, in order (one `find` each);
* a pattern cut at its top-level gaps (`[^\\n]*`, `.*`, greedy or lazy; `+` read as `*`)
  into pieces `S1 G S2 G ... Sk` is looked at from the right: `[^\\n]*(?=Sk)` finds the
  last place `Sk` matches, then the last place `Sk-1` matches ending before it, and so on;
  `S1` must match ending before the place found for `S2`. A gap matches any text of a line,
  so this holds exactly when the pattern matches somewhere, and each piece is looked for
  once per place instead of once per start. (A bound is given one character of slack so
  that `\\b` at a piece's end is judged as in the line: the check may let through a line
  the pattern then rejects, never the reverse.)

A pattern opening with an unbounded repeat of one character class (`[0-9]+ Killed`) is
searched from every character of a long run of that class; `(?<![0-9])` in front makes
every start but the run's first fail at once, and changes no match (the earliest start of a
match in a run is the run's start, which can take everything a later start takes).

`Linear.search` is the pattern's `search`, exactly: the checks only say when it is safe to
skip it. Hyperscan (linear by construction) needs none of this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any, AnyStr, Generic

_GAPS = (r"[^\n]", ".")
"""Pattern text read as a gap with `*` or `+` after it: any run of a line's characters (a
`+` gap is read as `*`, which can only let more lines through the check)."""
_LEADING_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")


@dataclass(frozen=True, slots=True)
class Branch(Generic[AnyStr]):
    """One top-level branch as its pieces: where each can match, found from the right."""

    first: re.Pattern[AnyStr]
    """The first piece, searched for (a match that ends in time)."""
    later: tuple[re.Pattern[AnyStr], ...]
    """`[^\n]*(?=piece)` for each later piece, last first: matched from the line's start,
    the greedy gap gives the rightmost place the piece matches before a bound."""

    def possible(self, line: AnyStr, start: int, stop: int) -> bool:
        bound = stop
        for piece in self.later:
            found = piece.match(line, start, min(bound + 1, stop))
            if found is None:
                return False
            bound = found.end()
        return self.first.search(line, start, min(bound + 1, stop)) is not None


@dataclass(frozen=True, slots=True)
class Linear(Generic[AnyStr]):
    """A compiled pattern with its linear-time pre-check (see the module doc)."""

    pattern: re.Pattern[AnyStr]
    checks: tuple[Branch[AnyStr], ...]
    """One per top-level branch: the pattern can match only where one of them says it may;
    empty when the pattern could not be cut into pieces (then `pattern` alone decides)."""
    literals: tuple[tuple[re.Pattern[AnyStr], ...], ...] = ()
    """Per top-level branch, the literal texts every match holds, in their order."""

    def possible(self, line: AnyStr, start: int = 0, stop: int | None = None) -> bool:
        """False only when `pattern` cannot match in line[start:stop]."""
        end = len(line) if stop is None else stop
        if self.literals and not any(_in_order(b, line, start, end) for b in self.literals):
            return False
        return not self.checks or any(b.possible(line, start, end) for b in self.checks)

    def search(self, line: AnyStr) -> re.Match[AnyStr] | None:
        """`pattern.search(line)`, with the linear pre-check first."""
        if not self.possible(line):
            return None
        return self.pattern.search(line)


def _in_order(literals: tuple[re.Pattern[AnyStr], ...], line: AnyStr, at: int, end: int) -> bool:
    for literal in literals:
        found = literal.search(line, at, end)
        if found is None:
            return False
        at = found.end()
    return True


@lru_cache(maxsize=8192)
def linear_text(regex: str, flags: int = 0) -> Linear[str]:
    """The linear form of a `str` pattern (cached: rule patterns are compiled once)."""
    branches = tuple(
        Branch(re.compile(first, flags), tuple(re.compile(p, flags) for p in later))
        for first, later in existence_checks(regex, flags)
    )
    literals = tuple(
        tuple(re.compile(text, flags) for text in branch)
        for branch in ordered_literals(regex, flags)
    )
    return Linear(re.compile(guarded(regex, flags), flags), branches, literals)


@lru_cache(maxsize=8192)
def linear_bytes(regex: str, flags: int = 0) -> Linear[bytes]:
    """The linear form of a pattern compiled for bytes (the pure-Python scan)."""

    def compiled(text: str) -> re.Pattern[bytes]:
        return re.compile(text.encode("utf-8"), flags)

    branches = tuple(
        Branch(compiled(first), tuple(compiled(p) for p in later))
        for first, later in existence_checks(regex, flags)
    )
    literals = tuple(
        tuple(compiled(text) for text in branch) for branch in ordered_literals(regex, flags)
    )
    return Linear(compiled(guarded(regex, flags)), branches, literals)


def ordered_literals(regex: str, flags: int = 0) -> tuple[tuple[str, ...], ...]:
    """Per top-level branch, regexes of the literal texts each match holds, in order (a
    line missing one, or holding them out of order, cannot match: one `find` each, where
    `re` would try every start); () when some branch has none to offer."""
    prefix, body = _split_flags(regex)
    try:
        parsed = list(_parser.parse(body, flags | _inline_flags(prefix)))
    except re.error:
        return ()
    if len(parsed) == 1 and parsed[0][0] is _sre.BRANCH:
        sequences = [list(branch) for branch in parsed[0][1][1]]
    else:
        sequences = [parsed]
    found: list[tuple[str, ...]] = []
    for sequence in sequences:
        texts = tuple(prefix + re.escape(text) for text in _literal_runs(sequence))
        if not texts:
            return ()
        found.append(texts)
    return tuple(found)


def _inline_flags(prefix: str) -> int:
    return re.compile(prefix).flags & ~re.UNICODE if prefix else 0


def _literal_runs(items: list[Any]) -> list[str]:
    """Runs of literal characters that every match of the sequence passes through, in order."""
    runs: list[str] = []
    current: list[str] = []
    for op, arg in items:
        if op is _sre.LITERAL:
            current.append(chr(arg))
            continue
        if current:
            runs.append("".join(current))
            current = []
        if op is _sre.SUBPATTERN:
            runs.extend(_literal_runs(list(arg[-1])))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and arg[0] >= 1:
            runs.extend(_literal_runs(list(arg[2])))  # the first pass holds them in order
    if current:
        runs.append("".join(current))
    return runs


def guarded(regex: str, flags: int = 0) -> str:
    """`regex` with `(?<!C)` before a leading unbounded repeat of the class `C` (see the
    module doc); the pattern itself when it opens otherwise or the result would not compile."""
    prefix, body = _split_flags(regex)
    lookbehind = _leading_repeat_guard(body, flags)
    if lookbehind is None:
        return regex
    candidate = prefix + lookbehind + body
    try:
        re.compile(candidate, flags)
    except re.error:
        return regex
    return candidate


def existence_checks(regex: str, flags: int = 0) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Per top-level branch, (first piece, `[^\\n]*(?=piece)` for the later ones, last
    first), see `Branch`; () when the pattern has no gap or cannot be cut (a backreference,
    a lookahead that could look past a bound, a possessive gap)."""
    prefix, body = _split_flags(regex)
    if "(?P=" in body or re.search(r"\\[1-9]", body):
        return ()  # a backreference: what a piece matches depends on an earlier one
    branches = [_split_gaps(branch) for branch in split_top(body, "|")]
    if all(pieces is not None and len(pieces) == 1 for pieces in branches):
        return ()  # no gap: nothing to skip (a leading repeat is `guarded` in the pattern)
    checks: list[tuple[str, tuple[str, ...]]] = []
    for pieces in branches:
        if pieces is None or any("(?=" in p or "(?!" in p for p in pieces[:-1]):
            return ()
        first = guarded(prefix + pieces[0], flags)
        later = tuple(f"{prefix}[^\\n]*(?=(?:{piece}))" for piece in reversed(pieces[1:]))
        checks.append((first, later))
    try:
        for first, later in checks:
            for text in (first, *later):
                re.compile(text, flags)
    except re.error:
        return ()
    return tuple(checks)


def _split_flags(regex: str) -> tuple[str, str]:
    found = _LEADING_FLAGS.match(regex)
    return (found.group(), regex[found.end() :]) if found else ("", regex)


def _width(regex: str, flags: int) -> tuple[int, int] | None:
    try:
        lo, hi = _parser.parse(regex, flags).getwidth()
    except (re.error, OverflowError):
        return None
    return int(lo), int(hi)


def split_top(regex: str, separator: str) -> list[str]:
    """`regex` cut at `separator` where it stands outside groups and classes."""
    parts: list[str] = []
    depth = 0
    in_class = False
    current = 0
    index = 0
    while index < len(regex):
        char = regex[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
            if regex.startswith("[^]", index) or regex.startswith("[]", index):
                index += 2 if regex[index + 1] == "]" else 3  # a leading `]` is literal
                continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0 and regex.startswith(separator, index):
            parts.append(regex[current:index])
            current = index + len(separator)
        index += 1
    parts.append(regex[current:])
    return parts


def _split_gaps(branch: str) -> list[str] | None:
    """The pieces between the branch's top-level gaps; None when a gap is possessive."""
    pieces: list[str] = []
    depth = 0
    in_class = False
    current = 0
    index = 0
    while index < len(branch):
        char = branch[index]
        if not in_class and depth == 0:
            gap = next((g for g in _GAPS if branch.startswith(g, index)), None)
            after = index + len(gap) + 1 if gap is not None else index
            if gap is not None and branch[after - 1 : after] in ("*", "+"):
                if branch.startswith("+", after):
                    return None
                pieces.append(branch[current:index])
                if branch.startswith("?", after):
                    after += 1
                current = index = after
                continue
        if char == "\\":
            index += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
            if branch.startswith("[^]", index) or branch.startswith("[]", index):
                index += 2 if branch[index + 1] == "]" else 3
                continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        index += 1
    pieces.append(branch[current:])
    return pieces


def _leading_repeat_guard(body: str, flags: int) -> str | None:
    """`(?<!C)` when `body` opens with `C+` / `C*` / `C{n,}` of one character class `C`, or
    with one character of `C` followed by such a repeat of a class holding all of `C`
    (`[A-Z][A-Za-z0-9_]*`): a start after a character of `C` can start one earlier."""
    try:
        parsed = list(_parser.parse(body, flags))
    except re.error:
        return None
    atom = _first_atom(body)
    if not parsed or atom is None:
        return None
    if _unbounded_single(parsed[0]):
        return f"(?<!{atom})"
    if len(parsed) < 2 or parsed[0][0] not in _SINGLE or not _unbounded_single(parsed[1]):
        return None
    repeated = _ATOM.match(body, len(atom))
    if repeated is None or not _subset(atom, repeated.group(), flags):
        return None
    return f"(?<!{atom})"


_SINGLE = (_sre.IN, _sre.LITERAL, _sre.NOT_LITERAL)


def _unbounded_single(node: tuple[Any, Any]) -> bool:
    op, arg = node
    if op not in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) or arg[1] is not _sre.MAXREPEAT:
        return False
    item = list(arg[2])
    return len(item) == 1 and item[0][0] in _SINGLE


@lru_cache(maxsize=256)
def _subset(inner: str, outer: str, flags: int) -> bool:
    """Whether every character `inner` matches (of the first 12,288) `outer` matches too."""
    small, big = re.compile(inner, flags), re.compile(outer, flags)
    return all(
        big.fullmatch(char) is not None
        for char in map(chr, range(0x3000))
        if small.fullmatch(char) is not None
    )


_ATOM = re.compile(r"\[(?:\\.|[^\]\\])+\]|\\[dDwWsS]|\\.|[^\\()\[\]|*+?{}.^$]")


def _first_atom(body: str) -> str | None:
    """The source text of the single-character atom that opens `body`, if simple."""
    found = _ATOM.match(body)
    return found.group() if found else None
