"""Where a row's matches can start on a line, from where its gate's matches end.

A row runs on every line its gate proposes (`redact.gates`), and `re.Pattern.sub` scans each
such line from its start to its end: for a pattern that begins with a look-behind or a class
(most rows), `re` tries a full match at every position, which made a few rows (secret names,
fully qualified names, `host=` fields, addresses) most of the redaction's cost on logs where
every line is proposed. Hyperscan reports where each gate match ends; for the rows below,
that end tells where the row's own matches can start:

* an exact start: the row's pattern can match only at the start of a run of the characters
  it is made of (its look-behind refuses any other place), and the run that holds the gate
  match is found with `str.rstrip` back from the gate's end; the pattern is tried there alone
  (`pattern.match`).
* a window: the match starts between a place and `reach` characters after it (a keyword of
  bounded length before the gate's end); `pattern.search` runs from there, and what it finds
  is the leftmost match from there, which is what `sub` finds next.

`anchored()` then gives what `sub` gives, calling the replace function on the same matches in
the same order, provided every match of the pattern on the line starts where some gate end
says (each rule below says why it holds). The rules read ASCII lines only: on others the
folded text the gates saw and the line's characters can disagree (a stand-in digit), and the
row runs as `sub` (tests/test_redact_anchors.py compares both on every sample line and on
lines built to sit at the edges).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from crashlens.redact.substitute import Repl

Locate: TypeAlias = Callable[[str, int], int]
"""(an ASCII line, the end of a gate match on it) -> a place on the line (see `Anchor`)."""
Anchored: TypeAlias = Callable[[Repl, str, Sequence[int]], str]
"""(replace function, line, the gate's match ends on it, ascending) -> what `sub` gives."""

_LETTERS_DIGITS = string.ascii_letters + string.digits
_SPACES = " \t\r\x0b\x0c\x1c\x1d\x1e\x1f"
"""What `\\s` takes in an ASCII line (a line holds no newline)."""


@dataclass(frozen=True, slots=True)
class Anchor:
    """A row's rule, from the end of one of its gate's matches.

    With `chars` (an exact start): `locate` gives the last character of a run of `chars`,
    and the row's match can start only where that run starts. Without: `locate` gives where
    a match can start first, and `reach` how far past that it can."""

    locate: Locate
    chars: str = ""
    reach: int = 0


def anchored(pattern: re.Pattern[str], anchor: Anchor) -> Anchored:
    """`pattern.sub` on one line, searched only where `anchor` says a match can start."""
    if anchor.chars:
        return _at_starts(pattern, anchor)
    return _in_windows(pattern, anchor.locate, anchor.reach)


def run_start(line: str, end: int, *classes: str) -> int:
    """Where `line[:end]` stripped of each of `classes` in turn ends: the start of the runs
    of those characters (the last class first) that end at `end`. Read through windows that
    grow fourfold, so the cost follows what is stripped, not where the run stands."""
    width = 64
    while True:
        low = max(0, end - width)
        window = line[low:end]
        for chars in classes:
            window = window.rstrip(chars)
        if window or low == 0:
            return low + len(window)
        width *= 4


def _at_starts(pattern: re.Pattern[str], anchor: Anchor) -> Anchored:
    match_at = pattern.match
    locate, chars = anchor.locate, anchor.chars

    def anchored_sub(repl: Repl, line: str, ends: Sequence[int]) -> str:
        if len(ends) == 1:
            # one gate match on the line (most lines): one place to try, no bookkeeping
            found = match_at(line, run_start(line, locate(line, ends[0]) + 1, chars))
            if found is None:
                return line
            return line[: found.start()] + repl(found) + line[found.end() :]
        starts: set[int] = set()
        low, high = 0, -1
        """The last run found: every gate end whose character falls in it gives its start
        (many ends in one long run cost one search back, not one each)."""
        for end in reversed(ends):
            last = locate(line, end)
            if low <= last <= high:
                continue
            low, high = run_start(line, last + 1, chars), last
            starts.add(low)
        pieces: list[str] = []
        position = 0
        for at in sorted(starts):
            if at < position:
                continue  # inside the last match: `sub` goes on from its end
            found = match_at(line, at)
            if found is None:
                continue
            pieces.append(line[position : found.start()])
            pieces.append(repl(found))
            position = found.end()
        if not pieces:
            return line
        pieces.append(line[position:])
        return "".join(pieces)

    return anchored_sub


def _in_windows(pattern: re.Pattern[str], locate: Locate, reach: int) -> Anchored:
    search = pattern.search

    def anchored_sub(repl: Repl, line: str, ends: Sequence[int]) -> str:
        lows = sorted({locate(line, end) for end in ends})
        pieces: list[str] = []
        position = 0
        covered = -1
        """The last place the windows searched so far reach: a match may still start there."""
        index, count = 0, len(lows)
        while True:
            if position <= covered:
                at = position
            else:
                # windows that end before the last match's end hold nothing `sub` would find
                while index < count and lows[index] + reach < position:
                    index += 1
                if index == count:
                    break
                at = max(position, lows[index])
                covered = lows[index] + reach
                index += 1
            found = search(line, at)
            if found is None:
                break
            # the leftmost match from `at`: what `sub` finds next, wherever it stands
            pieces.append(line[position : found.start()])
            pieces.append(repl(found))
            position = found.end()
        if not pieces:
            return line
        pieces.append(line[position:])
        return "".join(pieces)

    return anchored_sub


# --- the rules -------------------------------------------------------------------------------

_NAME = _LETTERS_DIGITS + "_.-"
_NAME_TAIL = "\"'=:\\" + _SPACES
"""What a secret name's gate takes after the name (`\\"`, quotes, spaces, `=` or `:`)."""


def _secret_name_last(line: str, end: int) -> int:
    return run_start(line, end, _NAME_TAIL) - 1


SECRET_NAME = Anchor(_secret_name_last, _NAME)
"""KEY_VALUE: the name is a run of `[A-Za-z0-9_.-]` (its look-behind refuses a start after
such a character) ending with the word the gate found, and only separator characters stand
between that word and the gate's end: the match starts where that run starts."""


def _top_level_last(line: str, end: int) -> int:
    if end > len(line):
        return len(line) - 1  # the gate took the newline after the line
    return end - 1 if line[end - 1].isalnum() else end - 2


FQDN = Anchor(_top_level_last, _LETTERS_DIGITS + ".-")
"""FQDN_RE: labels and dots only, after no `[\\w.@-]`: the match starts where the run of
`[A-Za-z0-9.-]` that holds the gate's top-level domain starts. The gate ends after the
domain (at a line's end) or after one character that no label holds."""


def _before_end(line: str, end: int) -> int:
    return end - 1


IPV4 = Anchor(_before_end, string.digits + ".")
"""IPV4: digits and dots after no `[\\w.]`: the start of the run of `[0-9.]` that the gate's
digits stand in."""

_KV_TAIL = "\"'=:" + _SPACES


def _kv_host_first(line: str, end: int) -> int:
    return max(0, run_start(line, end, _KV_TAIL) - 18)


KV_HOST = Anchor(_kv_host_first, reach=14)
"""KV_HOST: the gate ends after the keyword's separator (`=`, `:`, quotes, spaces, or a
flag's `=` or space); the keyword is 4 (`host`) to 18 (`launch_node_ipaddr`) characters
ending with the last letter before those, and a flag's `--` stands at most 14 before that
letter (`--rdzv-endpoint`)."""


def _prose_first(line: str, end: int) -> int:
    return max(0, end - 16)


PROSE_HOST = Anchor(_prose_first, reach=11)
"""PROSE_HOST: the match starts where one of its phrases starts, where the gate's match
starts: 5 (`pdsh@`) to 16 (`connect to host `) characters before its end."""
