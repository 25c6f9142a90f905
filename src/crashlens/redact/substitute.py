"""What `re.Pattern.sub` gives on one line, found with less scanning where a row's shape allows.

The rows run line by line (`Redactor._line_edits`), and `sub` scans every line to its end for
more matches after the last one. For two shapes of pattern that scan is known to find nothing,
and skipping it is most of what the row costs on a log where every line carries the value
(a syslog date on every dmesg line, an NCCL `host:pid:tid` prefix on every launcher line):

* `Start`: the pattern begins with `^` under `re.MULTILINE` (outside any alternation), so each
  match starts at a line's start; a line handed to a row holds no newline, so the only place
  is 0 (`pattern.match`), and a match there (never empty) ends the search.
* `Before`: the pattern ends in a look-ahead, so each match ends where `before` matches; the
  next match ends past the last one's end, so when `before` matches nowhere past it there is
  none, and the search stops.

Both call the row's replace function on the same matches, in the same order, as `sub` does
(`tests/test_redact_substitute.py` compares them on every line of the samples).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

Repl: TypeAlias = Callable[[re.Match[str]], str]
Substitute: TypeAlias = Callable[[Repl, str], str]
"""`pattern.sub`'s shape: (replace function, line) -> line."""


@dataclass(frozen=True, slots=True)
class Start:
    """Every match starts at a line's start (the pattern begins with `(?m)^`)."""


@dataclass(frozen=True, slots=True)
class Before:
    """Every match ends where `before` matches (the pattern's final look-ahead)."""

    before: re.Pattern[str]


Shape = Start | Before | None
"""What a row knows about where its matches stand (None: nothing, `sub` as it is)."""


def substitute(pattern: re.Pattern[str], shape: Shape) -> Substitute:
    """`pattern.sub` on one line (no newline in it), for a pattern of `shape`."""
    if isinstance(shape, Start):
        return _at_start(pattern)
    if isinstance(shape, Before):
        return _before(pattern, shape.before)
    return pattern.sub


def _at_start(pattern: re.Pattern[str]) -> Substitute:
    match_at = pattern.match

    def sub(repl: Repl, line: str) -> str:
        found = match_at(line)
        if found is None:
            return line
        return repl(found) + line[found.end() :]

    return sub


def _before(pattern: re.Pattern[str], before: re.Pattern[str]) -> Substitute:
    search, more = pattern.search, before.search

    def sub(repl: Repl, line: str) -> str:
        found = search(line)
        if found is None:
            return line
        pieces: list[str] = []
        position = 0
        while found is not None:
            pieces.append(line[position : found.start()])
            pieces.append(repl(found))
            position = found.end()
            # a next match is not empty and starts at `position` or later, so its end, where
            # `before` matches, is past `position`
            if more(line, position + 1) is None:
                break
            found = search(line, position)
        pieces.append(line[position:])
        return "".join(pieces)

    return sub
