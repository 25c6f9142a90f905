"""A linear-time test of whether a rule pattern can match a line, before `re` searches it.

Most rule patterns read `A[^\\n]*B`: a wording, anything, another wording. `re.search` tries
such a pattern from every place `A` matches, and from each one `[^\\n]*` runs to the end of
the line and backtracks looking for `B`: a long line holding many `A` and no `B` costs n^2
(and n^3 with two gaps); a garbled log line of a megabyte took hours. The per-line re-check
and the pure-Python scan run rule patterns on untrusted lines, so they first ask `Linear`.

Why a shortcut is exact: a gap (`[^\\n]*`, `.*`, greedy or lazy) matches any text of a
line, so once a fixed-width piece `S` matched somewhere, what follows the gap can match
after the *first* place `S` matches if it can match after any. Written as atomic groups,
`(?>[^\\n]*?S1)(?>[^\\n]*?S2)...(?>[^\\n]*?Sk)` matches at the line's start exactly when the
pattern matches somewhere, and each piece is searched for once. A pattern this cannot
rewrite (a variable-width piece before a gap, a backreference) keeps `re.search`, guarded
only by a leading repeat's lookbehind where it has one (below).

A pattern opening with an unbounded repeat of one character class (`[0-9]+ Killed`) is
searched from every character of a long run of that class; `(?<![0-9])` in front makes
every start but the run's first fail at once, and changes no match (the earliest start of a
match in a run is the run's start, which can take everything a later start takes).

`Linear.search` is the pattern's `search`, exactly: the shortcut only says when it is safe
to skip it. Hyperscan (linear by construction) needs none of this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any, AnyStr, Generic

_GAPS = (r"[^\n]*", ".*")
"""Pattern text read as a gap: any run of a line's characters."""
_LEADING_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")


@dataclass(frozen=True, slots=True)
class Linear(Generic[AnyStr]):
    """A compiled pattern with its linear-time pre-check (see the module doc)."""

    pattern: re.Pattern[AnyStr]
    checks: tuple[re.Pattern[AnyStr], ...]
    """Anchored patterns one of which matches at the line's start when `pattern` matches
    somewhere in it; empty when the pattern could not be rewritten."""

    def possible(self, line: AnyStr, start: int = 0, stop: int | None = None) -> bool:
        """False only when `pattern` cannot match in line[start:stop]."""
        if not self.checks:
            return True
        end = len(line) if stop is None else stop
        return any(check.match(line, start, end) is not None for check in self.checks)

    def search(self, line: AnyStr) -> re.Match[AnyStr] | None:
        """`pattern.search(line)`, with the linear pre-check first."""
        if not self.possible(line):
            return None
        return self.pattern.search(line)


@lru_cache(maxsize=8192)
def linear_text(regex: str, flags: int = 0) -> Linear[str]:
    """The linear form of a `str` pattern (cached: rule patterns are compiled once)."""
    compiled = re.compile(guarded(regex, flags), flags)
    return Linear(compiled, tuple(re.compile(c, flags) for c in existence_checks(regex, flags)))


@lru_cache(maxsize=8192)
def linear_bytes(regex: str, flags: int = 0) -> Linear[bytes]:
    """The linear form of a pattern compiled for bytes (the pure-Python scan)."""
    compiled = re.compile(guarded(regex, flags).encode("utf-8"), flags)
    checks = tuple(re.compile(c.encode("utf-8"), flags) for c in existence_checks(regex, flags))
    return Linear(compiled, checks)


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


def existence_checks(regex: str, flags: int = 0) -> tuple[str, ...]:
    """One anchored pattern per top-level branch (see the module doc); () when any branch
    cannot be rewritten (the caller then relies on `re.search` alone)."""
    prefix, body = _split_flags(regex)
    if "(?P=" in body or re.search(r"\\[1-9]", body):
        return ()  # a backreference: what a piece matches depends on an earlier one
    checks: list[str] = []
    branches = [_split_gaps(branch) for branch in _split_top(body, "|")]
    if all(pieces is not None and len(pieces) == 1 for pieces in branches):
        return ()  # no gap: nothing to skip (a leading repeat is `guarded` in the pattern)
    for pieces in branches:
        if pieces is None:
            return ()
        for piece in pieces[:-1]:
            width = _width(prefix + piece, flags)
            if width is None or width[0] != width[1]:
                return ()
        first = guarded(prefix + pieces[0], flags)[len(prefix) :]
        atoms = [first, *pieces[1:]]
        checks.append(prefix + "".join(f"(?>[^\\n]*?(?:{atom}))" for atom in atoms))
    try:
        for check in checks:
            re.compile(check, flags)
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


def _split_top(regex: str, separator: str) -> list[str]:
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
            if gap is not None:
                after = index + len(gap)
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
    """`(?<!C)` when `body` opens with `C+` / `C*` / `C{n,}` of one character class `C`."""
    try:
        parsed = list(_parser.parse(body, flags))
    except re.error:
        return None
    if not parsed:
        return None
    op, arg = parsed[0]
    if op not in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) or arg[1] is not _sre.MAXREPEAT:
        return None
    item: list[Any] = list(arg[2])
    if len(item) != 1 or item[0][0] not in (_sre.IN, _sre.LITERAL, _sre.NOT_LITERAL):
        return None
    atom = _first_atom(body)
    return f"(?<!{atom})" if atom else None


_ATOM = re.compile(r"\[(?:\\.|[^\]\\])+\]|\\[dDwWsS]|\\.|[^\\()\[\]|*+?{}.^$]")


def _first_atom(body: str) -> str | None:
    """The source text of the single-character atom that opens `body`, if simple."""
    found = _ATOM.match(body)
    return found.group() if found else None
